/* fork and fork+exec, everyone allocating (test_hook_programs.cpp asserts these numbers):
 *   parent   marker "parent": 2 x 1 MiB before the forks, 1 x 1 MiB after both children ended
 *   child A  (fork, no exec) marker "child": 3 x 512 KiB, frees 1, exits normally
 *   child B  fork + exec of this program with argument "exec": marker "exec": 4 x 256 KiB, all freed
 * Prints "childA <pid>" and "childB <pid>". */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "markers.h"

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "exec") == 0) {
    push("exec");
    void* p[4];
    for (int i = 0; i < 4; ++i) {
      p[i] = malloc(256 * 1024);
      keep(p[i]);
    }
    for (int i = 0; i < 4; ++i) free(p[i]);
    pop();
    return 0;
  }
  push("parent");
  void* a = malloc(1 << 20);
  void* b = malloc(1 << 20);
  keep(a);
  keep(b);
  pid_t child_a = fork();
  if (child_a == 0) {
    push("child");
    void* c[3];
    for (int i = 0; i < 3; ++i) {
      c[i] = malloc(512 * 1024);
      keep(c[i]);
    }
    free(c[0]);
    exit(0);
  }
  pid_t child_b = fork();
  if (child_b == 0) {
    char* args[] = {argv[0], (char*)"exec", NULL};
    execv(argv[0], args);
    _exit(127);
  }
  int status = 0;
  waitpid(child_a, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  waitpid(child_b, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  void* d = malloc(1 << 20);
  keep(d);
  say("childA", (uint64_t)child_a);
  say("childB", (uint64_t)child_b);
  free(a);
  free(b);
  free(d);
  pop();
  return 0;
}
