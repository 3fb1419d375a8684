"""hotkernel: hands and a referee for making GPU kernels faster."""

__version__ = "0.1.0"
