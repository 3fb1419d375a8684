"""Problem suites imported as targets: KernelBench problem files and GPU MODE reference-kernels tasks
(docs/suites.md). One module per format; ``importer`` is the shared flow the CLI and MCP call."""
