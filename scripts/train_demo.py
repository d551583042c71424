"""Train a small GroupNorm CNN on handwritten digits, twice side by side.

Two copies of the same network start from the same weights and see the same batches;
the only difference is the normalisation layer: ``ms_groupnorm.GroupNorm`` in one,
``mindspore.nn.GroupNorm`` in the other. The script prints held-out accuracy for both
and the largest per-step loss difference, saves a PNG of the curves, and exits with
status 1 when the two runs disagree by more than ``--tolerance`` (so it doubles as an
end-to-end check of the forward and backward kernels).

The data is scikit-learn's ``load_digits`` (1797 8x8 images shipped inside the
package: nothing is downloaded).

It needs ms_groupnorm installed (``pip install -e ".[demo]"`` in the checkout): the
script imports the installed package, never the source tree next to it.

Single process:  python scripts/train_demo.py [--mode graph|pynative]
Data parallel:   msrun --worker_num=2 --local_worker_num=2 --join=True --log_dir=msrun_logs \
                     scripts/train_demo.py --distributed
                 (each rank trains on its own shard; gradients are averaged over ranks
                 through MindSpore's collective backend, MCCL on CPU. msrun prints the
                 workers' output, keeps it in msrun_logs/worker_<rank>.log and exits
                 non-zero when a rank fails.)

The last line printed is the verdict: "PASS: ..." or "FAIL: ...".
"""
import argparse
import os
import sys
import time

import numpy as np

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
DEVICES = ("CPU", "GPU", "Ascend")

import mindspore as ms  # noqa: E402
from mindspore import Tensor, nn, ops  # noqa: E402

try:
    import ms_groupnorm  # noqa: E402
except ImportError as error:  # e.g. the CPU kernel library was never built
    sys.exit(f"FAIL: cannot import ms_groupnorm ({error}). Install it first: pip install -e \".[demo]\" "
             f"in the checkout.")

# Why 1e-2: both copies compute the same maths in float32 but sum in different orders,
# so the first losses differ by ~1e-7 and the weights drift apart by rounding that SGD
# can amplify. With the defaults the largest gap measured over seeds 0-5 was 2.4e-7 to
# 1.1e-3 (seed 3); a constant learning rate of 0.05 over 8 epochs reached 0.1, which is
# why the learning rate decays. A wrong gradient lands above the tolerance: with dgamma
# halved (forward unchanged) the gap reached 3e-2 within 60 steps (tests/test_train_demo.py).
DEFAULT_TOLERANCE = 1e-2
# The default schedule reaches 96-99 % on the held-out fifth of the digits; below 95 %
# something is wrong even if both copies agree.
DEFAULT_MIN_ACCURACY = 0.95


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["graph", "pynative"], default="graph",
                        help="MindSpore execution mode (default: graph)")
    parser.add_argument("--device", default="CPU", choices=DEVICES,
                        help="device to train on; it must be available to this MindSpore build (default: CPU)")
    parser.add_argument("--epochs", type=int, default=4, help="passes over the training set (default: 4)")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop after this many steps in total (for quick checks)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size per rank (default: 32)")
    parser.add_argument("--lr", type=float, default=0.02,
                        help="peak learning rate, cosine-decayed over the run (default: 0.02)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default: 0.9)")
    parser.add_argument("--seed", type=int, default=0, help="seed for weights, split and shuffling")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help=f"largest allowed |loss difference| per step (default: {DEFAULT_TOLERANCE})")
    parser.add_argument("--min-accuracy", type=float, default=None,
                        help="exit 1 when a held-out accuracy is below this fraction "
                             f"(default: {DEFAULT_MIN_ACCURACY} for a full run, none with --max-steps)")
    parser.add_argument("--plot", default=None,
                        help="PNG path (default: scripts/results/train_demo_<mode>[_distributed].png)")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel training; start the script with msrun")
    parser.add_argument("--save-params", default=None,
                        help="directory where each rank writes its final parameters as rank_<id>.npz")
    args = parser.parse_args(argv)
    if args.min_accuracy is None:
        args.min_accuracy = DEFAULT_MIN_ACCURACY if args.max_steps is None else 0.0
    return args


# ---------------------------------------------------------------------------- data
def load_digits_split(seed, test_fraction=0.2):
    """(x_train, y_train, x_test, y_test): 8x8 digits as float32 (N, 1, 8, 8) in [0, 1]."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise SystemExit("FAIL: the demo's data comes from scikit-learn, which is not installed. "
                         "Install it with: pip install -e \".[demo]\" (or pip install scikit-learn matplotlib)")

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=test_fraction, random_state=seed, stratify=labels)
    return x_train, y_train, x_test, y_test


def epoch_batches(num_samples, batch_size, rng):
    """Shuffled index batches of exactly batch_size (the remainder is dropped, so every
    batch has one static shape and GRAPH mode compiles once)."""
    order = rng.permutation(num_samples)
    for start in range(0, num_samples - batch_size + 1, batch_size):
        yield order[start:start + batch_size]


# ---------------------------------------------------------------------------- model
def build_net(norm_cls):
    """Three conv blocks (conv, GroupNorm, ReLU) on 8x8 inputs, then a linear classifier."""
    def block(c_in, c_out, stride, groups):
        return [nn.Conv2d(c_in, c_out, 3, stride=stride, pad_mode="same", has_bias=False),
                norm_cls(groups, c_out), nn.ReLU()]

    return nn.SequentialCell(
        *block(1, 16, 1, 4),     # 16 x 8 x 8
        *block(16, 32, 2, 8),    # 32 x 4 x 4
        *block(32, 32, 2, 8),    # 32 x 2 x 2
        nn.Flatten(),
        nn.Dense(32 * 2 * 2, 10),
    )


def copy_parameters(source, target):
    """Give ``target`` the parameter values of ``source`` (same structure, same names)."""
    src = source.parameters_dict()
    dst = target.parameters_dict()
    if list(src) != list(dst):
        raise RuntimeError(f"parameter names differ: {list(src)} vs {list(dst)}")
    for name, param in src.items():
        dst[name].set_data(Tensor(param.asnumpy()))


def flat_parameters(net):
    return np.concatenate([p.asnumpy().ravel() for p in net.trainable_params()])


def accuracy(net, x, y):
    logits = net(Tensor(x)).asnumpy()
    return float((logits.argmax(axis=1) == y).mean())


def make_train_step(net, lr, momentum, total_steps):
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    # Cosine decay: besides helping accuracy, a shrinking step keeps training from
    # amplifying the two copies' rounding differences late in the run (see DEFAULT_TOLERANCE).
    schedule = nn.cosine_decay_lr(lr * 0.01, lr, total_steps, 1, total_steps)
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=schedule, momentum=momentum)
    # In data-parallel mode TrainOneStepCell averages the gradients over the ranks itself.
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    step.set_train()
    return step


# ---------------------------------------------------------------------------- output
class ProgressBar:
    """A one-line progress bar on stderr (redrawn in place on a terminal, a line per
    epoch otherwise), so the demo needs no extra dependency."""

    def __init__(self, total, width=28, stream=sys.stderr, enabled=True):
        self.total, self.width, self.stream, self.enabled = total, width, stream, enabled
        self.interactive = stream.isatty()
        self.start = time.perf_counter()
        self.last_draw = 0.0

    def update(self, done, text, force=False):
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.interactive and not force and now - self.last_draw < 0.1 and done < self.total:
            return
        self.last_draw = now
        filled = int(self.width * done / max(self.total, 1))
        bar = "#" * filled + "." * (self.width - filled)
        line = f"[{bar}] {done}/{self.total} {now - self.start:5.1f}s {text}"
        if self.interactive:
            self.stream.write("\r" + line + ("\n" if done >= self.total else ""))
        elif force or done >= self.total:
            self.stream.write(line + "\n")
        self.stream.flush()


def save_plot(path, history, acc_ms, acc_ref, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.arange(1, len(history["loss_ms"]) + 1)
    fig, (ax_loss, ax_diff, ax_acc) = plt.subplots(1, 3, figsize=(15, 4.2))
    ax_loss.plot(steps, history["loss_ref"], label="mindspore.nn.GroupNorm", lw=2.5, alpha=0.6)
    ax_loss.plot(steps, history["loss_ms"], label="ms_groupnorm.GroupNorm", lw=1, ls="--")
    ax_loss.set(xlabel="step", ylabel="training loss", yscale="log", title="loss")
    ax_loss.legend()
    diff = np.abs(np.asarray(history["loss_ms"]) - np.asarray(history["loss_ref"]))
    ax_diff.plot(steps, np.maximum(diff, 1e-12), color="tab:red")
    ax_diff.set(xlabel="step", ylabel="|loss difference| (0 drawn at 1e-12)", yscale="log",
                title="loss difference")
    epochs = np.arange(1, len(history["acc_ms"]) + 1)
    ax_acc.plot(epochs, history["acc_ref"], "o-", label=f"mindspore.nn.GroupNorm ({acc_ref:.2%})", lw=2.5,
                alpha=0.6)
    ax_acc.plot(epochs, history["acc_ms"], "x--", label=f"ms_groupnorm.GroupNorm ({acc_ms:.2%})")
    low = min(history["acc_ms"] + history["acc_ref"])
    ax_acc.set(xlabel="epoch", ylabel="held-out accuracy", title="accuracy", ylim=(max(0.0, low - 0.05), 1.005))
    ax_acc.legend(loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------- distributed
def init_distributed():
    """(rank, size) after joining the job msrun started; data parallel with mean gradients."""
    from mindspore.communication import get_group_size, get_rank, init

    init()  # backend chosen by device: MCCL on CPU, HCCL on Ascend, NCCL on GPU
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    return get_rank(), get_group_size()


def max_difference_across_ranks(net):
    """Largest |rank r's parameters - rank 0's parameters| over all ranks (gathered)."""
    flat = Tensor(flat_parameters(net))
    gathered = ops.AllGather()(flat).asnumpy().reshape(-1, flat.shape[0])
    return float(np.max(np.abs(gathered - gathered[0])))


# ---------------------------------------------------------------------------- main
def main(argv=None):
    args = parse_args(argv)
    mode = ms.GRAPH_MODE if args.mode == "graph" else ms.PYNATIVE_MODE
    if not ms.hal.is_available(args.device):
        print(f"FAIL: --device {args.device} is not available to this MindSpore build "
              f"(available: {', '.join(d for d in DEVICES if ms.hal.is_available(d))})", file=sys.stderr)
        return 2
    ms.set_context(mode=mode)
    ms.set_device(args.device)
    rank, size = init_distributed() if args.distributed else (0, 1)
    is_main = rank == 0
    say = print if is_main else (lambda *a, **k: None)

    ms.set_seed(args.seed)  # every rank draws the same initial weights
    x_train, y_train, x_test, y_test = load_digits_split(args.seed)
    x_train, y_train = x_train[rank::size], y_train[rank::size]  # this rank's shard

    net_ref = build_net(nn.GroupNorm)
    net_ms = build_net(ms_groupnorm.GroupNorm)
    copy_parameters(net_ref, net_ms)
    steps_per_epoch = len(x_train) // args.batch_size
    total = args.epochs * steps_per_epoch
    if args.max_steps is not None:
        total = min(total, args.max_steps)
    step_ref = make_train_step(net_ref, args.lr, args.momentum, total)
    step_ms = make_train_step(net_ms, args.lr, args.momentum, total)
    say(f"digits: {len(x_train)} training images per rank x {size} rank(s), {len(x_test)} held out; "
        f"mode {args.mode}, device {args.device}, {total} steps of batch {args.batch_size}")
    if args.distributed:
        start_gap = max_difference_across_ranks(net_ms)
        say(f"initial parameters, largest difference across ranks: {start_gap:.3g}")

    history = {"loss_ms": [], "loss_ref": [], "acc_ms": [], "acc_ref": []}
    rng = np.random.default_rng(args.seed + 1000 * rank)
    bar = ProgressBar(total, enabled=is_main)
    started = time.perf_counter()
    step = 0
    while step < total:
        for batch in epoch_batches(len(x_train), args.batch_size, rng):
            x, y = Tensor(x_train[batch]), Tensor(y_train[batch])
            history["loss_ref"].append(float(step_ref(x, y).asnumpy()))
            history["loss_ms"].append(float(step_ms(x, y).asnumpy()))
            step += 1
            epoch_done = step % steps_per_epoch == 0 or step == total
            if epoch_done:
                history["acc_ms"].append(accuracy(net_ms, x_test, y_test))
                history["acc_ref"].append(accuracy(net_ref, x_test, y_test))
            text = f"loss ms_groupnorm {history['loss_ms'][-1]:.4f}  nn.GroupNorm {history['loss_ref'][-1]:.4f}"
            if history["acc_ms"]:
                text += f"  acc {history['acc_ms'][-1]:.3f}/{history['acc_ref'][-1]:.3f}"
            bar.update(step, text, force=epoch_done)
            if step == total:
                break
    elapsed = time.perf_counter() - started

    acc_ms, acc_ref = history["acc_ms"][-1], history["acc_ref"][-1]
    diffs = np.abs(np.asarray(history["loss_ms"]) - np.asarray(history["loss_ref"]))
    worst = int(np.argmax(diffs))
    failures = []
    say(f"trained {total} steps in {elapsed:.1f} s ("
        + ("graph mode, compile included)" if args.mode == "graph" else "pynative mode)"))
    say(f"held-out accuracy: ms_groupnorm.GroupNorm {acc_ms:.2%}, mindspore.nn.GroupNorm {acc_ref:.2%}")
    say(f"largest loss difference: {diffs[worst]:.3g} at step {worst + 1} (tolerance {args.tolerance:g})")
    if not diffs[worst] <= args.tolerance:  # also catches NaN
        failures.append(f"loss difference {diffs[worst]:.3g} exceeds tolerance {args.tolerance:g}")
    if min(acc_ms, acc_ref) < args.min_accuracy:
        failures.append(f"accuracy {min(acc_ms, acc_ref):.2%} below {args.min_accuracy:.2%}")

    if args.distributed:
        gaps = {name: max_difference_across_ranks(net) for name, net in
                (("ms_groupnorm", net_ms), ("nn.GroupNorm", net_ref))}
        say("final parameters, largest difference across ranks: "
            + ", ".join(f"{name} {gap:.3g}" for name, gap in gaps.items()))
        if any(gap != 0.0 for gap in gaps.values()):
            failures.append("ranks ended with different parameters")
    if args.save_params:
        os.makedirs(args.save_params, exist_ok=True)
        np.savez(os.path.join(args.save_params, f"rank_{rank}.npz"),
                 **{f"ms.{k}": v.asnumpy() for k, v in net_ms.parameters_dict().items()},
                 **{f"ref.{k}": v.asnumpy() for k, v in net_ref.parameters_dict().items()},
                 loss_ms=np.asarray(history["loss_ms"]), loss_ref=np.asarray(history["loss_ref"]))

    if is_main:
        suffix = "_distributed" if args.distributed else ""
        path = args.plot or os.path.join(SCRIPT_DIR, "results", f"train_demo_{args.mode}{suffix}.png")
        title = (f"GroupNorm CNN on digits, {args.mode} mode, {size} rank(s): "
                 f"largest loss difference {diffs[worst]:.2g}")
        save_plot(path, history, acc_ms, acc_ref, title)
        say(f"plot saved to {os.path.abspath(path)}")
    for failure in failures:
        print(f"FAILED (rank {rank}): {failure}", file=sys.stderr)
    failed_ranks = [rank] if failures else []
    if args.distributed:
        # Every rank learns which ranks failed, so that rank 0 can give the job's verdict
        # and no rank exits (making msrun stop the others) before all are done.
        flags = ops.AllGather()(Tensor(np.array([len(failures)], np.int32))).asnumpy()
        failed_ranks = [r for r, count in enumerate(flags) if count]
    if failed_ranks:
        say("FAIL: " + ("; ".join(failures) if failed_ranks == [rank] else
                        f"rank(s) {failed_ranks} failed (each rank's reason is in its output above)"), flush=True)
        return 1 if failures or is_main else 0
    say(f"PASS: ms_groupnorm.GroupNorm trained like mindspore.nn.GroupNorm on {size} rank(s) (largest loss "
        f"difference {diffs[worst]:.2g} <= {args.tolerance:g}, held-out accuracy {acc_ms:.1%} vs "
        f"{acc_ref:.1%})", flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
