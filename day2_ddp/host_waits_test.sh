#!/usr/bin/env bash
# Day 2's steps never wait for the device after the first, on the simulated accelerator of each
# of 2 ranks (a GPU's copies and waits, counted in host memory): DDP with overlapped buckets and
# without, the naive sync, TP2.4's ring, synchronised batch norm, LARS and LAMB (trust ratios on
# the device), clipping (the norm on the device) and accumulation.
set -uo pipefail
source "$1"  # expect
solution=$2
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE  # not shared by the ranks
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2)
run=("${mpirun[@]}" "$solution" --synthetic 384 --test --test-nsteps 12 --log-every 6
  --no-progress --batch-size 16 --device sim --num-workers 1)

expect_wait_free "${run[@]}"
expect_wait_free "${run[@]}" --no-overlap
expect_wait_free "${run[@]}" --ddp naive --sync-bn
expect_wait_free "${run[@]}" --allreduce ring
expect_wait_free "${run[@]}" --optimizer lars --clip-grad-norm 1
expect_wait_free "${run[@]}" --optimizer lamb --accumulate 2
