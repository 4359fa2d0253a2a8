// Batch job headers other than SLURM's: PBS, Grid Engine, PJM (job_header.hpp).
#include "preflight/wrap/job_header.hpp"

#include "preflight/common/error.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace preflight::wrap;

namespace {

std::map<std::string, std::string> variables(const BatchJob& j) {
  return {j.variables.begin(), j.variables.end()};
}

}  // namespace

TEST(JobHeader, PbsProSelectAndTorqueNodes) {
  // PBS Pro: one chunk a node; PBS_NODEFILE names each node once per MPI process (mpiprocs, default 1).
  BatchJob a = batch_job_header("#!/bin/bash\n#PBS -l select=4:ncpus=64:ngpus=4:mpiprocs=4\n#PBS -N run\n");
  ASSERT_EQ(a.directive, "#PBS");
  EXPECT_EQ(variables(a).at("PBS_NUM_NODES"), "4");
  EXPECT_EQ(variables(a).at("PBS_NP"), "16");
  EXPECT_EQ(variables(a).at("PBS_JOBNAME"), "run");
  ASSERT_EQ(a.host_files.size(), 1u);
  const auto lines = host_file_lines(a.host_files[0]);
  ASSERT_EQ(lines.size(), 16u);
  EXPECT_EQ(lines[3], "preflight-node1");
  EXPECT_EQ(lines[4], "preflight-node2");
  EXPECT_EQ(a.workdir_variables, std::vector<std::string>{"PBS_O_WORKDIR"});
  // chunks of two kinds add up; `-lselect=` spelled together; the last -l select wins
  BatchJob b = batch_job_header("#PBS -lselect=1:mpiprocs=2+2:mpiprocs=8\n");
  EXPECT_EQ(variables(b).at("PBS_NUM_NODES"), "3");
  EXPECT_EQ(variables(b).at("PBS_NUM_PPN"), "2");
  // Torque: nodes=N:ppn=P, with other resources after a comma
  BatchJob t = batch_job_header("#PBS -l nodes=3:ppn=8:gpus=8,walltime=01:00:00\n");
  EXPECT_EQ(host_file_lines(t.host_files.at(0)).size(), 24u);
  // sizes that are not numbers, a node named by host, or no size: nothing
  EXPECT_TRUE(batch_job_header("#PBS -l select=${NODES}:ngpus=4\n").empty());
  EXPECT_TRUE(batch_job_header("#PBS -l nodes=gpu01+gpu02\n").empty());
  EXPECT_TRUE(batch_job_header("#PBS -l walltime=01:00:00\n#PBS -q debug\n").empty());
  EXPECT_TRUE(batch_job_header("# PBS -l select=2\necho '#PBS -l select=2'\n").empty());
}

TEST(JobHeader, GridEngineResourceTypesAndParallelEnvironments) {
  // ABCI: a resource type's count is the host count; its name in SGE_RESOURCE_TYPE; two host files.
  BatchJob a = batch_job_header("#!/bin/bash\n#$ -l rt_AF=32\n#$ -l h_rt=20:00:00\n#$ -j y\n#$ -cwd\n");
  ASSERT_EQ(a.directive, "#$");
  EXPECT_EQ(variables(a).at("NHOSTS"), "32");
  EXPECT_EQ(variables(a).at("SGE_RESOURCE_TYPE"), "rt_AF");
  EXPECT_EQ(variables(a).at("JOB_ID"), "1");  // a number: scripts take ports from it
  ASSERT_EQ(a.host_files.size(), 2u);
  EXPECT_EQ(a.host_files[0].variable, "PE_HOSTFILE");
  EXPECT_EQ(host_file_lines(a.host_files[0])[31], "preflight-node32 1 preflight.q UNDEFINED");
  EXPECT_EQ(a.host_files[1].variable, "SGE_JOB_HOSTLIST");
  EXPECT_EQ(host_file_lines(a.host_files[1]).size(), 32u);
  // TSUBAME's node_f with a parallel environment's slots
  BatchJob t = batch_job_header("#$ -l node_f=2,h_rt=1:00:00\n#$ -pe mpi 16\n");
  EXPECT_EQ(variables(t).at("NHOSTS"), "2");
  EXPECT_EQ(variables(t).at("NSLOTS"), "16");
  EXPECT_EQ(variables(t).count("SGE_RESOURCE_TYPE"), 0u);
  EXPECT_EQ(host_file_lines(t.host_files.at(0))[0], "preflight-node1 8 preflight.q UNDEFINED");
  // slots alone: no host count, no host file
  BatchJob s = batch_job_header("#$ -pe orte 32\n");
  EXPECT_EQ(variables(s).at("NSLOTS"), "32");
  EXPECT_EQ(variables(s).count("NHOSTS"), 0u);
  EXPECT_TRUE(s.host_files.empty());
  EXPECT_TRUE(batch_job_header("#$ -l h_rt=1:00:00\n#$ -pe mpi 4-8\n").empty());
}

TEST(JobHeader, PjmNodesAndMpiProcesses) {
  BatchJob a =
      batch_job_header("#PJM -L rscgrp=a\n#PJM -L node=4\n#PJM --mpi proc=32\n#PJM -L elapse=1:00:00\n");
  ASSERT_EQ(a.directive, "#PJM");
  EXPECT_EQ(variables(a).at("PJM_NODE"), "4");
  EXPECT_EQ(variables(a).at("PJM_MPI_PROC"), "32");
  EXPECT_EQ(host_file_lines(a.host_files.at(0)).size(), 4u);
  // Fugaku's node shapes multiply; several resources in one -L
  EXPECT_EQ(variables(batch_job_header("#PJM -L \"node=2x3x2,elapse=1:00:00\"\n")).at("PJM_NODE"), "12");
  EXPECT_TRUE(batch_job_header("#PJM -L rscgrp=a\n").empty());
}

TEST(JobHeader, ShellDefaultsKeepTheAllocationsValues) {
  BatchJob j = batch_job_header("#PBS -l select=2:mpiprocs=2\n#PBS -N \"a $b\"\n");
  const std::string sh = batch_job_shell_defaults(j);
  EXPECT_NE(sh.find("PBS_NUM_NODES=\"${PBS_NUM_NODES:-2}\""), std::string::npos) << sh;
  EXPECT_NE(sh.find("PBS_JOBNAME=\"${PBS_JOBNAME:-a \\$b}\""), std::string::npos) << sh;
  EXPECT_NE(sh.find("PBS_O_WORKDIR=\"${PBS_O_WORKDIR:-$PWD}\""), std::string::npos) << sh;
  EXPECT_NE(sh.find("if [ -z \"${PBS_NODEFILE:-}\" ]"), std::string::npos) << sh;
  EXPECT_EQ(batch_job_shell_defaults(BatchJob{}), "");
}

TEST(JobHeader, LsfSlotsAndHostsAWay) {
  BatchJob a = batch_job_header("#BSUB -n 16\n#BSUB -R \"span[ptile=8]\"\n#BSUB -q gpu\n");
  ASSERT_EQ(a.directive, "#BSUB");
  EXPECT_EQ(variables(a).at("LSB_DJOB_NUMPROC"), "16");
  EXPECT_EQ(variables(a).at("LSB_MCPU_HOSTS"), "preflight-node1 8 preflight-node2 8");
  EXPECT_EQ(host_file_lines(a.host_files.at(0)).size(), 16u);
  // Summit's node count, slots from ptile
  BatchJob s = batch_job_header("#BSUB -nnodes 4\n#BSUB -W 2:00\n");
  EXPECT_EQ(host_file_lines(s.host_files.at(0)).size(), 4u);
  // slots without ptile: one host holds them all
  EXPECT_EQ(variables(batch_job_header("#BSUB -n 4\n")).at("LSB_MCPU_HOSTS"), "preflight-node1 4");
  EXPECT_TRUE(batch_job_header("#BSUB -q gpu\n#BSUB -W 2:00\n").empty());
}

// SLURM host lists as `scontrol show hostnames` expands them (preflight run answers it where Slurm is not
// installed): ranges keep the width their first bound is written with, several brackets combine.
TEST(JobHeader, HostListsExpandAsScontrolDoes) {
  using preflight::wrap::expand_hostlist;
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_hostlist("preflight-node[1-4]"),
            (V{"preflight-node1", "preflight-node2", "preflight-node3", "preflight-node4"}));
  EXPECT_EQ(expand_hostlist("gpu[08-11,15],login1"),
            (V{"gpu08", "gpu09", "gpu10", "gpu11", "gpu15", "login1"}));
  EXPECT_EQ(expand_hostlist("n[8-10]"), (V{"n8", "n9", "n10"}));
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[1-2].ib"),
            (V{"rack1-n1.ib", "rack1-n2.ib", "rack2-n1.ib", "rack2-n2.ib"}));
  EXPECT_EQ(expand_hostlist("a, b"), (V{"a", "b"}));
  EXPECT_EQ(expand_hostlist("node007"), (V{"node007"}));
  EXPECT_EQ(expand_hostlist("n[0001-1000]").size(), 1000u);
  EXPECT_EQ(expand_hostlist("n[0001-1000]").back(), "n1000");
  for (const char* bad : {"gpu[1-4", "gpu1-4]", "gpu[a-b]", "gpu[4-1]", "gpu[1-2[3]]", "n[0-999999]"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << bad << " was expanded";
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}
