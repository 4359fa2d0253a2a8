/* Allocates 4096 + i bytes (marker "killed") for i = 0, 1, … forever, keeping every block, and after each
 * allocation returned writes i (4 bytes, native order) to stdout: the test reads the announcements and
 * kills the process with SIGKILL. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "markers.h"

int main(void) {
  push("killed");
  for (uint32_t i = 0;; ++i) {
    void* p = malloc(4096 + (size_t)i);
    keep(p);
    if (write(1, &i, sizeof i) != sizeof i) return 1;
    if (i % 256 == 255) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}
