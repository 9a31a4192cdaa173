"""The replica shapes a cloud sells: AWS Fargate's task sizes, vCPUs with memory.

A shop sells shoes in whole and half sizes, not in the size of your foot: Fargate runs a
task only in the CPU and memory combinations of its table ("Troubleshoot Amazon ECS task
definition invalid CPU or memory errors", the Amazon ECS user guide; `docs/model.md`
cites it). A plan priced for a shape nobody sells is no plan, so a shape is checked
against the table and, if it is not in it, rounded up to the smallest one that is: the
fewest vCPUs at least those asked whose memory reaches the memory asked, then the least
memory it sells at least as large. Memory there is in GB of 1,024 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

from labsim.model.checks import ParameterError

#: Bytes in one of the table's GB (its memory is set in MiB: 1 GB = 1,024 MiB).
BYTES_PER_SHAPE_GB = 1024**3


def _steps(low: int, high: int, step: int) -> tuple[float, ...]:
    return tuple(float(gb) for gb in range(low, high + 1, step))


#: vCPUs -> the memory (GB) Fargate sells with them.
FARGATE_SHAPES: dict[float, tuple[float, ...]] = {
    0.25: (0.5, 1.0, 2.0),
    0.5: _steps(1, 4, 1),
    1.0: _steps(2, 8, 1),
    2.0: _steps(4, 16, 1),
    4.0: _steps(8, 30, 1),
    8.0: _steps(16, 60, 4),
    16.0: _steps(32, 120, 8),
}


@dataclass(frozen=True)
class Shape:
    """A replica's size: vCPUs and memory, as the cloud sells them."""

    vcpus: float
    memory_gb: float

    @property
    def memory_bytes(self) -> int:
        """The memory in bytes (GB of 1,024 MiB)."""
        return round(self.memory_gb * BYTES_PER_SHAPE_GB)

    def __str__(self) -> str:
        return f"{self.vcpus:g} vCPU, {self.memory_gb:g} GB"


def is_sold(shape: Shape) -> bool:
    """Whether Fargate sells exactly this shape."""
    return shape.memory_gb in FARGATE_SHAPES.get(shape.vcpus, ())


def smallest_sold(shape: Shape) -> Shape:
    """The shape itself if Fargate sells it, else the smallest sold one at least as large
    in both vCPUs and memory; a `ParameterError` when none is."""
    for vcpus, memories in FARGATE_SHAPES.items():
        if vcpus < shape.vcpus or memories[-1] < shape.memory_gb:
            continue
        memory_gb = next(gb for gb in memories if gb >= shape.memory_gb)
        return Shape(vcpus, memory_gb)
    largest = max(FARGATE_SHAPES)
    raise ParameterError(
        f"AWS Fargate sells no replica of {shape}: at most {largest:g} vCPU with "
        f"{FARGATE_SHAPES[largest][-1]:g} GB"
    )
