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
# A PostgreSQL server the centre runs for the studies (slurm/hpo.sbatch's default --db; the
# password in ~/.pgpass, never here):
#   export COURSE_STUDY_SERVER=postgresql://$USER@db.example.org:5432/studies
