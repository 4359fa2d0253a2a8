#pragma once
/// @file job_header.hpp
/// What a batch scheduler other than SLURM gives a job script inside the allocation its header asks for:
/// PBS (PBS Pro, OpenPBS, Torque: `#PBS -l select=…` / `nodes=…`), Grid Engine (SGE, UGE, AGE: ABCI's
/// `#$ -l rt_AF=N`, TSUBAME's `node_f=N`, `#$ -pe NAME SLOTS`), Fujitsu's PJM (`#PJM -L node=N`,
/// `--mpi proc=P`) and IBM's LSF (`#BSUB -n SLOTS -R "span[ptile=P]"`, Summit's `-nnodes N`).  A job script
/// run outside any allocation for the analysis (`preflight wrap --mode analyze`, `preflight run`) gets these
/// as defaults, so that the sizes it computes from them
/// (`NUM_NODES=$(wc -l < $PBS_NODEFILE)`, `NUM_GPUS=$((NHOSTS * 8))`) are the job's, not empty.
/// SLURM's `#SBATCH` lines are read by rewrite.hpp's sbatch_job_environment.
///
/// Variables (as each scheduler's manual names them):
///  - PBS: PBS_JOBID, PBS_O_WORKDIR (the directory the job was submitted from: here the working directory),
///    PBS_NODEFILE (a file naming each node once per MPI process of it: PBS Pro's mpiprocs, default 1 per
///    chunk; Torque's ppn), PBS_NUM_NODES, PBS_NUM_PPN and PBS_NP (Torque);
///  - Grid Engine: JOB_ID, NHOSTS, NSLOTS (with -pe), PE_HOSTFILE (`host slots queue processors` lines), and
///    on ABCI SGE_RESOURCE_TYPE and SGE_JOB_HOSTLIST (one host per line);
///  - PJM: PJM_JOBID, PJM_O_WORKDIR, PJM_NODE, PJM_MPI_PROC, PJM_O_NODEINF (one node per line);
///  - LSF: LSB_JOBID, LSB_DJOB_NUMPROC, LSB_MCPU_HOSTS (`host slots …`), LS_SUBCWD, LSB_DJOB_HOSTFILE (each
///  host
///    once per slot).
/// Host names are made up (`preflight-node1` …): the analysis starts no process on them.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace preflight::wrap {

/// A file of host names whose path a variable holds: node i (1-based, of `nodes`) is written `repeats`
/// times as `preflight-node<i><suffix>`.
struct HostFile {
  std::string variable;
  int nodes = 0;
  int repeats = 1;
  std::string suffix;
};

/// The allocation a job header asks for, as its scheduler would describe it to the script.
struct BatchJob {
  std::string directive;  ///< "#PBS", "#$", "#PJM" or "#BSUB"; empty when the header gives no size
  std::string summary;    ///< for notes: "2 nodes (#PBS -l select=2:ngpus=4), 1 process per node"
  std::vector<std::pair<std::string, std::string>> variables;  ///< name, value
  std::vector<std::string> workdir_variables;                  ///< set to the working directory
  std::vector<HostFile> host_files;
  bool empty() const { return directive.empty(); }
};

/// Reads the `#PBS`, `#$`, `#PJM` and `#BSUB` lines of `script` (the first scheduler with a size wins, in
/// that order). Sizes that are not plain numbers (a variable) are left out, as are resources it does not
/// know; a header with no size gives an empty BatchJob.  Never throws.
BatchJob batch_job_header(std::string_view script);

/// The lines of `f`'s file.
std::vector<std::string> host_file_lines(const HostFile& f);

/// Shell text (POSIX sh) that sets each of `job`'s variables unless the environment has it, and writes each
/// host file (under ${TMPDIR:-/tmp}) unless its variable is set: the wrapped script's header.  "" for an
/// empty job.
std::string batch_job_shell_defaults(const BatchJob& job);

/// The host names of a SLURM host list, in order, as `scontrol show hostnames LIST` prints them:
/// comma-separated items, each a name with bracketed ranges (`gpu[01-03,07]`, `rack[1-2]-n[1-4]`: every
/// combination, the first bracket varying slowest), a range's numbers as wide as its first bound is written
/// (`[08-11]` → 08 09 10 11; `[8-11]` → 8 9 10 11).  Blanks around items are ignored.
/// @throws InputError (where = "host list") naming the list for an unclosed bracket, a range that is not
///   two whole numbers, a reversed range, or more than 100000 names.
std::vector<std::string> expand_hostlist(std::string_view list);

}  // namespace preflight::wrap
