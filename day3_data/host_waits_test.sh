#!/usr/bin/env bash
# Day 3's steps never wait for the device after the first, on the simulated accelerator: the
# augmentation and mixing on the device (their draws uploaded through pinned slots, the labels
# mixed there), the host's MixUp (its batch pinned before the copy), on one rank and two.
set -uo pipefail
source "$1"  # expect
solution=$2
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE  # not shared by the ranks
run=("$solution" --synthetic 384 --test --test-nsteps 12 --log-every 6 --no-progress
  --batch-size 16 --device sim --num-workers 1)

expect_wait_free "${run[@]}"
expect_wait_free "${run[@]}" --auto-augment randaugment --aug-device
expect_wait_free "${run[@]}" --auto-augment trivialaugment --mixup 0.8 --cutmix 1.0 --aug-device
expect_wait_free "${run[@]}" --mixup 0.8
expect_wait_free mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 \
  -np 2 "${run[@]}" --cutmix 1.0 --aug-device --optimizer lamb
