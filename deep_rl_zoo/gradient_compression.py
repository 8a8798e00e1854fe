"""Compressed gradients, for actors that compute gradients and send them to a learner (A2C's gradient variant).

A flat float32 gradient g of P numbers is encoded into fixed-shape tensors (so it fits a shared-memory buffer, or
a message to another machine) and decoded back on the learner:

* 'none': the float32 numbers themselves (4 bytes per parameter), exact.
* 'bfloat16': rounded to nearest bfloat16 (2 bytes): float32's 8-bit exponent with an 8-bit significand, so no
  scaling is needed and the relative error of every number is at most 2^-8.
* 'int8': blocks of `INT8_BLOCK_SIZE` numbers, each scaled by its largest magnitude to [-127, 127] and rounded
  stochastically to an integer (1 byte, plus one float32 scale per block): rounding up with probability equal to
  the fractional part makes the decoded gradient unbiased, E[decode(encode(g))] = g, as in QSGD (Alistarh et al.
  2017, "QSGD: Communication-Efficient SGD via Gradient Quantization and Encoding"); the error of each number is
  below its block's scale max|g_block| / 127.

`buffer_spec` gives the tensors of a method, `encode` fills them in place and `decode` reads them.
"""

import math

import torch

METHODS = ('none', 'bfloat16', 'int8')
INT8_BLOCK_SIZE = 256
_INT8_LEVELS = 127


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f'gradient compression must be one of {", ".join(METHODS)}, got {method!r}')


def _num_blocks(num_parameters: int) -> int:
    return math.ceil(num_parameters / INT8_BLOCK_SIZE)


def buffer_spec(method: str, num_parameters: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """{name: (shape, dtype)} of the tensors that carry one encoded gradient of `num_parameters` numbers."""
    _check_method(method)
    if num_parameters < 1:
        raise ValueError(f'num_parameters must be >= 1, got {num_parameters}')
    if method == 'none':
        return {'gradient': ((num_parameters,), torch.float32)}
    if method == 'bfloat16':
        return {'gradient': ((num_parameters,), torch.bfloat16)}
    return {'gradient': ((num_parameters,), torch.int8), 'gradient_scale': ((_num_blocks(num_parameters),), torch.float32)}


def encoded_bytes(method: str, num_parameters: int) -> int:
    """Bytes one encoded gradient takes."""
    return sum(math.prod(shape) * torch.empty(0, dtype=dtype).element_size() for shape, dtype in buffer_spec(method, num_parameters).values())


def encode(method: str, gradient: torch.Tensor, buffer: dict[str, torch.Tensor], generator: torch.Generator | None = None) -> None:
    """Writes the flat float `gradient` [P] into `buffer`'s tensors of `buffer_spec(method, P)`, in place.
    `generator` draws the stochastic rounding of 'int8' (on the gradient's device)."""
    _check_method(method)
    gradient = gradient.detach().flatten().float()
    if method != 'int8':
        buffer['gradient'].copy_(gradient)  # the copy into a bfloat16 tensor rounds to nearest
        return
    num_parameters = gradient.numel()
    padded = torch.zeros(_num_blocks(num_parameters) * INT8_BLOCK_SIZE, device=gradient.device)
    padded[:num_parameters] = gradient
    blocks = padded.view(-1, INT8_BLOCK_SIZE)
    scale = blocks.abs().amax(dim=1) / _INT8_LEVELS  # [num_blocks]; 0 for an all-zero block
    scaled = blocks / torch.where(scale > 0, scale, torch.ones_like(scale)).unsqueeze(1)  # in [-127, 127]
    noise = torch.rand(scaled.shape, generator=generator, device=gradient.device)
    quantized = torch.floor(scaled + noise).clamp_(-_INT8_LEVELS, _INT8_LEVELS)
    buffer['gradient'].copy_(quantized.flatten()[:num_parameters].to(torch.int8))
    buffer['gradient_scale'].copy_(scale)


def decode(method: str, buffer: dict[str, torch.Tensor]) -> torch.Tensor:
    """The float32 gradient [P] that `encode` wrote into `buffer`."""
    _check_method(method)
    if method != 'int8':
        return buffer['gradient'].float()
    quantized = buffer['gradient'].float()
    scale = buffer['gradient_scale'].repeat_interleave(INT8_BLOCK_SIZE)[: quantized.numel()]
    return quantized * scale
