# An example slurm/site.sh (copy it there and edit; site.sh is not versioned): a site's modules
# and storage spaces, sourced by every job (slurm/env.sh) and by slurm/race.sh.
# The modules the labs were built against:
#   module purge
#   module load cuda/13.0 cudnn nccl openmpi
# The storage spaces (slurm/spaces.sh says what goes where). On a centre that exports them per
# project, as Jean Zay does with SCRATCH, WORK and DSDIR:
export COURSE_SCRATCH=${SCRATCH:-}
export COURSE_WORK=${WORK:-}
export COURSE_DATASETS=${DSDIR:-}
