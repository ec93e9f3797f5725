"""PyTorch's side of bench/compare/compare.sh: the same models, steps, data loading and
all-reduces as the project, timed the same way, and the numerical parity check against a step
file written by //bench/compare:parity_step.

Subcommands print one result line each ("name: value unit") for compare.sh to read.
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torchvision

DTYPES = {0: (torch.float32, 4), 3: (torch.int32, 4), 4: (torch.int64, 8), 5: (torch.uint8, 1)}
MAGIC = b"COURSE-CKPT-1\n"


def read_checkpoint(path):
    """Header and tensors of a file in the project's checkpoint format (checkpoint.h)."""
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            sys.exit(f"{path} is not a course checkpoint")
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        (count,) = struct.unpack("<Q", f.read(8))
        tensors = {}
        for _ in range(count):
            (name_length,) = struct.unpack("<I", f.read(4))
            name = f.read(name_length).decode()
            code, rank = struct.unpack("<BB", f.read(2))
            shape = struct.unpack(f"<{rank}q", f.read(8 * rank))
            (nbytes,) = struct.unpack("<Q", f.read(8))
            dtype, _ = DTYPES[code]
            data = bytearray(f.read(nbytes))
            tensors[name] = torch.frombuffer(data, dtype=dtype).reshape(shape).clone()
    return header, tensors


def model(name, channels, classes=10):
    """The course's networks (common/models/models.h) in PyTorch, parameters in the same order."""
    if name == "smallnet":
        def stage(i, o):
            return [nn.Conv2d(i, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU()]
        return nn.Sequential(*stage(channels, 32), nn.MaxPool2d(2, 2), *stage(32, 64),
                             nn.MaxPool2d(2, 2), *stage(64, 128), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(128, classes))
    if name == "vit-b16":  # torchvision's ViT-B/16 (its attention through SDPA), patches of `channels`
        net = torchvision.models.vit_b_16(num_classes=classes)
        net.conv_proj = nn.Conv2d(channels, 768, 16, 16)
        return net
    factory = {"resnet18": torchvision.models.resnet18, "resnet18-cifar": torchvision.models.resnet18,
               "resnet50": torchvision.models.resnet50}[name]
    net = factory(num_classes=classes)
    if name == "resnet18-cifar":
        net.conv1 = nn.Conv2d(channels, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
    else:
        net.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
    return net


class GptBlock(nn.Module):
    """A pre-LayerNorm GPT-2 block (a ViT's without the mask), parameters in the project's order
    (common/nn/transformer_blocks.h)."""

    def __init__(self, channels, heads, hidden=None, causal=True):
        super().__init__()
        self.heads, self.causal = heads, causal
        hidden = hidden or 4 * channels
        self.ln_1 = nn.LayerNorm(channels)
        self.c_attn = nn.Linear(channels, 3 * channels)
        self.c_proj = nn.Linear(channels, channels)
        self.ln_2 = nn.LayerNorm(channels)
        self.c_fc = nn.Linear(channels, hidden)
        self.mlp_proj = nn.Linear(hidden, channels)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)

        def heads(z):
            return z.view(b, t, self.heads, c // self.heads).transpose(1, 2)

        y = nn.functional.scaled_dot_product_attention(heads(q), heads(k), heads(v),
                                                       is_causal=self.causal)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    """GPT-2 with the output layer tied to the token embedding, as the project's."""

    def __init__(self, layers, heads, channels, context, vocabulary, **_):
        super().__init__()
        self.wte = nn.Embedding(vocabulary, channels)
        self.wpe = nn.Embedding(context, channels)
        self.h = nn.ModuleList(GptBlock(channels, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(channels)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T


class RmsNorm(nn.Module):
    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(channels)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotated(x, theta):
    """Rotary position embedding of (B, heads, T, D) as Meta's Llama: the pair (x_2i, x_2i+1) at
    position t turned by t theta^(-2i/D)."""
    d, t = x.shape[-1], x.shape[-2]
    frequencies = 1.0 / theta ** (torch.arange(0, d, 2).float() / d)
    angles = torch.outer(torch.arange(t).float(), frequencies)
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d // 2, 2))
    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angles), angles)).flatten(-2)


class LlamaBlock(nn.Module):
    """RMSNorm, grouped-query attention on rotary positions, SwiGLU, no biases; wq|wk|wv and
    w1|w3 packed as the project's (common/nn/transformer_blocks.h)."""

    def __init__(self, channels, heads, kv_heads, hidden, rope_theta):
        super().__init__()
        self.heads, self.kv_heads, self.theta = heads, kv_heads, rope_theta
        d = channels // heads
        self.attention_norm = RmsNorm(channels)
        self.wqkv = nn.Linear(channels, (heads + 2 * kv_heads) * d, bias=False)
        self.wo = nn.Linear(channels, channels, bias=False)
        self.ffn_norm = RmsNorm(channels)
        self.w13 = nn.Linear(channels, 2 * hidden, bias=False)
        self.w2 = nn.Linear(hidden, channels, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        d = c // self.heads
        q, k, v = self.wqkv(self.attention_norm(x)).split(
            [self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=2)

        def heads(z, n):
            return z.view(b, t, n, d).transpose(1, 2)

        group = self.heads // self.kv_heads
        q = rotated(heads(q, self.heads), self.theta)
        k = rotated(heads(k, self.kv_heads), self.theta).repeat_interleave(group, dim=1)
        v = heads(v, self.kv_heads).repeat_interleave(group, dim=1)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, c))
        gate, up = self.w13(self.ffn_norm(x)).chunk(2, dim=2)
        return x + self.w2(nn.functional.silu(gate) * up)


class Llama(nn.Module):
    """The project's Llama-class decoder: token embedding, Llama blocks, a final RMSNorm, the
    output layer tied or its own."""

    def __init__(self, layers, heads, kv_heads, channels, hidden, vocabulary, tied, rope_theta,
                 **_):
        super().__init__()
        self.wte = nn.Embedding(vocabulary, channels)
        self.h = nn.ModuleList(LlamaBlock(channels, heads, kv_heads, hidden, rope_theta)
                               for _ in range(layers))
        self.ln_f = RmsNorm(channels)
        self.lm_head = None if tied else nn.Linear(channels, vocabulary, bias=False)

    def forward(self, tokens):
        x = self.wte(tokens)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.T if self.lm_head is None else self.lm_head(x)


class PatchTokens(nn.Module):
    """(N, C, h, w) -> (N, h w, C) plus the patch embedding's bias."""

    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return x.flatten(2).transpose(1, 2) + self.bias


class ClassToken(nn.Module):
    def __init__(self, patches, channels):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(channels))
        self.pos_embed = nn.Parameter(torch.zeros(patches + 1, channels))

    def forward(self, tokens):
        cls = self.cls_token.expand(tokens.shape[0], 1, -1)
        return torch.cat([cls, tokens], dim=1) + self.pos_embed


class Vit(nn.Module):
    """The Vision Transformer as the project's (common/models/vit/vit.h): patch convolution (its bias
    applied to the tokens), class token, positions, encoder blocks, LayerNorm and head on the
    class token."""

    def __init__(self, image, patch, layers, heads, channels, hidden, in_channels, classes):
        super().__init__()
        self.patch_embed = nn.Sequential(
            nn.Conv2d(in_channels, channels, patch, patch, bias=False), PatchTokens(channels))
        self.embed = ClassToken((image // patch) ** 2, channels)
        self.blocks = nn.ModuleList(GptBlock(channels, heads, hidden, causal=False)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, classes)

    def forward(self, images):
        x = self.embed(self.patch_embed(images))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, 0]))


class MbConv(nn.Module):
    """CoAtNet's MBConv block from the paper (Dai et al. 2021) as the project's: pre-activation
    BatchNorm, 1x1 expansion to 4x the output width, depthwise 3x3 (stride 2 when it downsamples),
    squeeze-excitation on a quarter of the input width, 1x1 projection with a bias; the shortcut
    average-pooled and projected where the shape changes. GELU in its tanh form, as the project's."""

    def __init__(self, cin, cout, down):
        super().__init__()
        hidden, reduced = 4 * cout, max(1, cin // 4)
        self.down = down
        self.norm = nn.BatchNorm2d(cin)
        self.expand = nn.Conv2d(cin, hidden, 1, bias=False)
        self.expand_norm = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, 3, 2 if down else 1, 1, groups=hidden, bias=False)
        self.depthwise_norm = nn.BatchNorm2d(hidden)
        self.se_fc1 = nn.Linear(hidden, reduced)
        self.se_fc2 = nn.Linear(reduced, hidden)
        self.project = nn.Conv2d(hidden, cout, 1)
        self.shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        gelu = lambda z: nn.functional.gelu(z, approximate="tanh")
        h = gelu(self.expand_norm(self.expand(self.norm(x))))
        h = gelu(self.depthwise_norm(self.depthwise(h)))
        gate = torch.sigmoid(self.se_fc2(nn.functional.silu(self.se_fc1(h.mean((2, 3))))))
        h = self.project(h * gate[:, :, None, None])
        s = nn.functional.avg_pool2d(x, 2) if self.down else x
        return h + (self.shortcut(s) if self.shortcut is not None else s)


class RelativeBias(nn.Module):
    """One learned scalar per head and 2-D offset (dy, dx) between query and key on a g x g grid,
    looked up as the (heads, T, T) bias added to the attention scores."""

    def __init__(self, heads, grid):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(heads, (2 * grid - 1) ** 2))
        rows, cols = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
        dy = rows.flatten()[:, None] - rows.flatten()[None, :]
        dx = cols.flatten()[:, None] - cols.flatten()[None, :]
        self.index = (dy + grid - 1) * (2 * grid - 1) + dx + grid - 1

    def forward(self):
        return self.table[:, self.index]


class RelativeTransformer(nn.Module):
    """CoAtNet's transformer block (eq. 3-5 of the paper) on (N, side^2, C) tokens: pre-LN
    attention with a relative position bias over the grid (pooled 2x2 first when the block
    downsamples; its shortcut pooled and projected where the shape changes), then a pre-LN GELU
    MLP of 4x the width."""

    def __init__(self, cin, cout, side, down, head_dim):
        super().__init__()
        self.side, self.down, self.width, self.heads = side, down, cout, cout // head_dim
        self.norm = nn.LayerNorm(cin)
        self.qkv = nn.Linear(cin, 3 * cout)
        self.bias = RelativeBias(self.heads, side // 2 if down else side)
        self.proj = nn.Linear(cout, cout)
        self.shortcut = nn.Linear(cin, cout) if cin != cout else None
        self.ff_norm = nn.LayerNorm(cout)
        self.fc1 = nn.Linear(cout, 4 * cout)
        self.fc2 = nn.Linear(4 * cout, cout)

    def pool(self, tokens):
        n, _, c = tokens.shape
        grid = tokens.transpose(1, 2).reshape(n, c, self.side, self.side)
        return nn.functional.avg_pool2d(grid, 2).flatten(2).transpose(1, 2)

    def forward(self, x):
        h = self.norm(x)
        if self.down:
            h = self.pool(h)
        b, t, _ = h.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2)
                   for z in self.qkv(h).split(self.width, dim=2))
        y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.bias())
        y = self.proj(y.transpose(1, 2).reshape(b, t, self.width))
        s = self.pool(x) if self.down else x
        x = y + (self.shortcut(s) if self.shortcut is not None else s)
        gelu = lambda z: nn.functional.gelu(z, approximate="tanh")
        return x + self.fc2(gelu(self.fc1(self.ff_norm(x))))


class Coatnet(nn.Module):
    """CoAtNet (Dai et al. 2021): a stem of two 3x3 convolutions (the first of stride 2), MBConv
    stages, transformer stages with a relative position bias, a head of token mean, LayerNorm,
    tanh pre-logits and the classes. Each stage's first block halves the map unless the stage
    says not to."""

    def __init__(self, image, stem, stages, in_channels, classes, head_dim):
        super().__init__()
        gelu = nn.GELU(approximate="tanh")
        self.stem = nn.Sequential(nn.Conv2d(in_channels, stem, 3, 2, 1, bias=False),
                                  nn.BatchNorm2d(stem), gelu, nn.Conv2d(stem, stem, 3, 1, 1))
        self.blocks, self.attention = nn.ModuleList(), []
        side, width = (image - 1) // 2 + 1, stem
        for attention, depth, channels, downsample in stages:
            for i in range(depth):
                down = downsample and i == 0
                self.blocks.append(RelativeTransformer(width, channels, side, down, head_dim)
                                   if attention else MbConv(width, channels, down))
                self.attention.append(attention)
                side, width = (side // 2 if down else side), channels
        self.norm = nn.LayerNorm(width)
        self.pre_logits = nn.Linear(width, width)
        self.fc = nn.Linear(width, classes)

    def forward(self, images):
        x = self.stem(images)
        for attention, block in zip(self.attention, self.blocks):
            if attention and x.dim() == 4:
                x = x.flatten(2).transpose(1, 2)
            x = block(x)
        return self.fc(torch.tanh(self.pre_logits(self.norm(x.mean(1)))))


def decoder(config):
    return Llama(**config) if config["family"] == "llama" else Gpt(**config)


def training_step(net, x, y):
    """One step as the project's labs take it: SGD with momentum, label smoothing 0.1."""
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        opt.step()

    return step


def running_buffers(net):
    return [b for n, b in net.named_buffers() if not n.endswith("num_batches_tracked")]


def parity(args):
    """Loads the project's weights and batch, runs the same step, compares within tolerance."""
    header, t = read_checkpoint(args.step_file)
    gpt = "gpt" in header
    if gpt:
        net = decoder(header["gpt"])
    elif "vit" in header:
        net = Vit(**header["vit"])
    elif "coatnet" in header:
        net = Coatnet(**header["coatnet"])
    else:
        net = model(header["model"], t["images"].shape[1])
    params, buffers = list(net.parameters()), running_buffers(net)
    if len(params) != len(header["parameters"]) or len(buffers) != len(header["buffers"]):
        sys.exit("the PyTorch model does not have the project model's parameters")
    with torch.no_grad():
        for i, p in enumerate(params):
            p.copy_(t[f"param.{i:03d}"].reshape(p.shape))
        for i, b in enumerate(buffers):
            b.copy_(t[f"buffer.{i:03d}"].reshape(b.shape))
    net.train()
    logits = net(t["tokens"].long()) if gpt else net(t["images"])
    logits = logits.reshape(t["labels"].shape[0], -1)
    loss = nn.functional.cross_entropy(logits, t["labels"])
    loss.backward()
    worst = {}

    def compare(what, got, ref):
        err = (got - ref).abs()
        allowed = args.atol + args.rtol * ref.abs()
        worst[what] = max(worst.get(what, 0.0), float((err / allowed).max()))
        return bool((err <= allowed).all())

    ok = compare("logits", t["logits"], logits.detach())
    ok &= compare("loss", t["loss"], loss.detach().reshape(1))
    for i, p in enumerate(params):
        ok &= compare("gradients", t[f"grad.{i:03d}"].reshape(p.shape), p.grad)
    max_rel = max(float(((t[f"grad.{i:03d}"].reshape(p.shape) - p.grad).abs().max()
                         / p.grad.abs().max().clamp_min(1e-30))) for i, p in enumerate(params))
    if gpt:
        # One AdamW step from the project's gradients: its first update is lr g / (|g| + eps),
        # so gradients that agree to 1e-7 of their scale still differ by far more than the
        # tolerance where |g| is near eps; the same gradients isolate the optimizer.
        with torch.no_grad():
            for i, p in enumerate(params):
                p.grad.copy_(t[f"grad.{i:03d}"].reshape(p.shape))
        torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1).step()
        for i, p in enumerate(params):
            ok &= compare("updated", t[f"updated.{i:03d}"].reshape(p.shape), p.detach())
    print(f"parity {header['model']}: {'PASS' if ok else 'FAIL'} (loss {float(t['loss'][0]):.6f} "
          f"vs {float(loss.detach()):.6f}; worst error / allowed: logits {worst['logits']:.3f}, loss "
          f"{worst['loss']:.3f}, gradients {worst['gradients']:.3f}"
          + (f", AdamW update {worst['updated']:.3f}" if gpt else "") + "; largest gradient "
          f"difference {max_rel:.2e} of the tensor's largest value; "
          f"atol {args.atol:g}, rtol {args.rtol:g})")
    return 0 if ok else 1


def train_step(args):
    """Training images/s: synthetic batch, SGD with momentum, label smoothing 0.1; on a GPU
    optionally under bf16 autocast (the labs' --amp), timed between device synchronisations."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    net = model(args.model, 1).to(device)
    x = torch.randn(args.batch, 1, args.size, args.size, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)
    if args.channels_last:
        net = net.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    full_precision_step = training_step(net, x, y)

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp):
            full_precision_step()

    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    step()  # the first step is excluded, as the project's chronometer does
    synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    synchronize()
    print(f"train_step: {args.batch * args.steps / (time.perf_counter() - start):.1f} images/s")


# The day-4 lab's presets that the comparison trains (day4_large_models/README.md; gpt2 on random
# tokens, the lab's --synthetic-tokens).
GPT_PRESETS = {
    "gpt-tiny": dict(layers=4, heads=4, channels=128, context=64, vocabulary=256),
    "gpt-mini": dict(layers=6, heads=6, channels=384, context=256, vocabulary=256),
    "gpt2": dict(layers=12, heads=12, channels=768, context=1024, vocabulary=50257),
}


def gpt_train(args):
    """Training tokens/s of a GPT preset: random token windows of the preset's context, AdamW as
    the day-4 lab's (lr 2e-3, weight decay 0.1), optionally under bf16 autocast (the lab's
    --amp), the first step excluded, timed between device synchronisations."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    config = GPT_PRESETS[args.model]
    net = Gpt(**config).to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=0.1)
    tokens = torch.randint(0, config["vocabulary"], (args.batch, config["context"] + 1),
                           device=device)
    x, y = tokens[:, :-1], tokens[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp):
            logits = net(x)
        nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                    y.reshape(-1)).backward()
        opt.step()

    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    step()
    synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    synchronize()
    elapsed = time.perf_counter() - start
    print(f"gpt_train: {args.batch * config['context'] * args.steps / elapsed:.1f} tokens/s")


def layers(args):
    """Forward + backward time of the small network's second-stage layers (batch 128, 14 px,
    NCHW), as //bench:layers_bench times the project's."""
    torch.set_num_threads(args.threads)

    def timed(layer, shape, runs=20):
        x = torch.randn(*shape, requires_grad=True)
        for _ in range(3):
            layer(x).sum().backward()
        start = time.perf_counter()
        for _ in range(runs):
            layer(x).sum().backward()
        return (time.perf_counter() - start) / runs * 1e3

    print(f"layer conv: {timed(nn.Conv2d(32, 64, 3, 1, 1, bias=False), (128, 32, 14, 14)):.2f} ms")
    print(f"layer batchnorm: {timed(nn.BatchNorm2d(64), (128, 64, 14, 14)):.2f} ms")
    print(f"layer maxpool: {timed(nn.MaxPool2d(2, 2), (128, 64, 14, 14)):.2f} ms")
    print(f"layer relu: {timed(nn.ReLU(), (128, 64, 14, 14)):.2f} ms")


def profile(args):
    """Where a training step of the small network (batch 128) spends its time: torch.profiler's
    operators by self CPU time, per step."""
    torch.set_num_threads(args.threads)
    net = model("smallnet", 1)
    x, y = torch.randn(128, 1, 28, 28), torch.randint(0, 10, (128,))
    step = training_step(net, x, y)

    for _ in range(3):
        step()
    steps = 10
    with torch.profiler.profile() as prof:
        for _ in range(steps):
            step()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) / steps / 1e3
    print(f"profile step: {total:.1f} ms")
    for e in events[:8]:
        print(f"profile {e.key}: {e.self_cpu_time_total / steps / 1e3:.1f} ms")


def _last_epoch(batches, epochs):
    """images/s and the first batch's latency (ms) of the last of `epochs` passes."""
    for _ in range(epochs):
        start, images, first_ms = time.perf_counter(), 0, None
        for x, _ in batches:
            if first_ms is None:
                first_ms = 1e3 * (time.perf_counter() - start)
            images += x.shape[0]
        rate = images / (time.perf_counter() - start)
    return rate, first_ms


def loader(args):
    """DataLoader images/s over an ImageFolder of JPEGs with training transforms, at steady
    state: persistent workers, `epochs` passes (the first a warm-up), the last one timed."""
    t = torchvision.transforms
    data = torchvision.datasets.ImageFolder(args.data_dir, transform=t.Compose([
        t.RandomResizedCrop(args.size), t.RandomHorizontalFlip(), t.ToTensor(),
        t.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
    batches = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True,
                                          num_workers=args.workers, pin_memory=False,
                                          persistent_workers=True)
    rate, _ = _last_epoch(batches, args.epochs)
    print(f"loader: {rate:.1f} images/s")


def loader_formats(args):
    """DataLoader at steady state over day 3's files: torchvision's ImageFolder (colour, as the
    project's ImageFolder decodes) or webdataset's shards (grey, as written), decoding and
    normalisation only, persistent workers, `epochs` passes (the first a warm-up)."""
    t = torchvision.transforms
    if args.format == "folder":
        data = torchvision.datasets.ImageFolder(os.path.join(args.data_dir, "train"), transform=t.Compose([
            t.ToTensor(), t.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]))
        batches = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True,
                                              num_workers=args.workers, persistent_workers=True)
    else:
        import glob
        import webdataset as wds
        shards = sorted(glob.glob(os.path.join(args.data_dir, "train", "*.tar")))
        normalise = t.Compose([t.ToTensor(), t.Normalize((0.2860,), (0.3530,))])
        data = (wds.WebDataset(shards, shardshuffle=len(shards), empty_check=False)
                .shuffle(args.buffer).decode("pil").to_tuple("jpg", "cls")
                .map_tuple(normalise, int).batched(args.batch))
        batches = wds.WebLoader(data, batch_size=None, num_workers=args.workers,
                                persistent_workers=True)
    rate, first_ms = _last_epoch(batches, args.epochs)
    print(f"loader: {rate:.1f} images/s\nfirst_batch_ms: {first_ms:.1f}")


def _allreduce_rank(rank, world, sizes, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for nbytes in sizes:
        t = torch.ones(nbytes // 4)
        iterations = max(5, min(500, (256 << 20) // nbytes))
        for _ in range(2):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iterations):
            dist.all_reduce(t)
        mine = torch.tensor([(time.perf_counter() - start) / iterations])
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        if rank == 0:
            out.put((nbytes, float(mine)))
    dist.destroy_process_group()


def allreduce(args):
    """Gloo all-reduce time per size on `ranks` processes (slowest rank's mean)."""
    sizes = [1 << s for s in range(10, 27, 2)]
    context = mp.get_context("spawn")
    out = context.SimpleQueue()
    mp.start_processes(_allreduce_rank, args=(args.ranks, sizes, args.port, out),
                       nprocs=args.ranks, start_method="spawn")
    while not out.empty():
        nbytes, seconds = out.get()
        print(f"allreduce {nbytes}: {seconds * 1e6:.1f} us")


def _ddp_rank(rank, world, batch, steps, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    net = nn.parallel.DistributedDataParallel(model("smallnet", 1))
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
    step = training_step(net, x, y)

    step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if rank == 0:
        out.put((time.perf_counter() - start) / steps)
    dist.destroy_process_group()


def ddp(args):
    """DDP step time of the small network on `ranks` processes (gloo)."""
    out = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(_ddp_rank, args=(args.ranks, args.batch, args.steps, args.port, out),
                       nprocs=args.ranks, start_method="spawn")
    print(f"ddp_step: {out.get() * 1e3:.2f} ms")


def read_idx(path):
    """An IDX file (gzip-compressed or not) as a tensor: Fashion-MNIST's images or labels."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(f">{dims}I", data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def race(args):
    """The race's reference recipe on Fashion-MNIST as the project runs it (day3_data/README.md):
    the small network, batch 128, SGD with momentum 0.9, one-cycle to --lr stepped every step
    (no momentum cycling, as the project's schedule), label smoothing 0.1, images normalised
    with Fashion-MNIST's mean and std; the test accuracy after every epoch (batches of 250) and
    the seconds since the start, validation included."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    def split(prefix):
        images = read_idx(os.path.join(args.data_dir, f"{prefix}-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(args.data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
        return ((images.float() / 255 - 0.2860) / 0.3530).unsqueeze(1), labels.long()
    train_x, train_y = split("train")
    test_x, test_y = split("t10k")
    net = model("smallnet", 1)
    steps = (len(train_y) + args.batch - 1) // args.batch
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=args.epochs * steps, cycle_momentum=False)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        net.train()
        order = torch.randperm(len(train_y))
        for i in range(steps):
            batch = order[i * args.batch:(i + 1) * args.batch]
            optimizer.zero_grad(set_to_none=True)
            loss_fn(net(train_x[batch]), train_y[batch]).backward()
            optimizer.step()
            schedule.step()
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_y), 250):
                correct += (net(test_x[i:i + 250]).argmax(1) == test_y[i:i + 250]).sum().item()
        print(f"race epoch {epoch}: {correct / len(test_y):.4f} at "
              f"{time.perf_counter() - start:.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parity")
    p.add_argument("step_file")
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--rtol", type=float, default=1e-5)
    p.set_defaults(run=parity)
    p = sub.add_parser("train-step")
    p.add_argument("--model", default="smallnet")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true", help="bf16 autocast, as the labs' --amp")
    p.set_defaults(run=train_step)
    p = sub.add_parser("gpt-train")
    p.add_argument("--model", choices=sorted(GPT_PRESETS), default="gpt-tiny")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--amp", action="store_true", help="bf16 autocast, as the lab's --amp")
    p.set_defaults(run=gpt_train)
    for name, run in (("layers", layers), ("profile", profile)):
        p = sub.add_parser(name)
        p.add_argument("--threads", type=int, default=2)
        p.set_defaults(run=run)
    p = sub.add_parser("loader")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=56)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.set_defaults(run=loader)
    p = sub.add_parser("loader-formats")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--format", choices=("folder", "tar"), required=True)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--buffer", type=int, default=1000)
    p.set_defaults(run=loader_formats)
    for name, run in (("allreduce", allreduce), ("ddp", ddp)):
        p = sub.add_parser(name)
        p.add_argument("--ranks", type=int, default=2)
        p.add_argument("--batch", type=int, default=64)
        p.add_argument("--steps", type=int, default=20)
        p.add_argument("--port", type=int, default=29511)
        p.set_defaults(run=run)
    p = sub.add_parser("race")
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=race)
    args = parser.parse_args()
    sys.exit(args.run(args) or 0)


if __name__ == "__main__":
    main()
