"""Reads a run's TensorBoard event files with the tensorboard package's own reader and prints
every scalar (tag, step, value) and text summary, as a check that the project's event files
(common/train/event_file.h) open in TensorBoard.

    .venv-compare/bin/python bench/compare/read_events.py LOGDIR
"""
import sys

from tensorboard.backend.event_processing import event_accumulator


def main(logdir):
    events = event_accumulator.EventAccumulator(logdir, size_guidance={"tensors": 0})
    events.Reload()
    tags = events.Tags()
    for tag in tags["scalars"]:
        for scalar in events.Scalars(tag):
            print(f"scalar {tag} step {scalar.step} value {scalar.value}")
    for tag in tags["tensors"]:
        for tensor in events.Tensors(tag):
            text = tensor.tensor_proto.string_val[0].decode()
            print(f"text {tag} step {tensor.step}: {text}")
    if not tags["scalars"] and not tags["tensors"]:
        sys.exit(f"no summaries in {logdir}")


if __name__ == "__main__":
    main(sys.argv[1])
