#!/bin/bash
# A submission script (written for preflight's tests): two SLURM jobs of a sweep and a PBS job on more nodes
# than its header asks for.  Under `preflight run` in an analysis mode each job runs here instead.
set -e
DIR=$(dirname "$0")
for L in 4 8; do
  JOB=$(sbatch --parsable -N 2 --export=ALL,LAYERS=$L "$DIR/sbatch_job.sh")
  echo "submitted slurm job $JOB"
done
qsub -l select=4 -v UNUSED=1 "$DIR/pbs_style.sh"
