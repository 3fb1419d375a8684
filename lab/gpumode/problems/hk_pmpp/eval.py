"""The suite's harness in GPU MODE's layout: ``python eval.py TASK_DIR SUBMISSION`` checks a submission's
``custom_kernel(data)`` on every case of ``tests`` in task.yml. hotkernel does not run this file: it imports the
task (``hotkernel import gpumode TASK_DIR``) and judges the submission with its own contract."""

import importlib.util
import os
import sys

import yaml


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(task_dir, submission):
    sys.path[:0] = [task_dir, os.path.dirname(os.path.abspath(task_dir))]
    reference = load(os.path.join(task_dir, "reference.py"), "reference")
    custom = load(submission, "submission").custom_kernel
    with open(os.path.join(task_dir, "task.yml")) as handle:
        cases = yaml.safe_load(handle)["tests"]
    failures = 0
    for case in cases:
        data = reference.generate_input(**case)
        ok, why = reference.check_implementation(data, custom(data))
        print(f"{case}: {'pass' if ok else 'fail: ' + why}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
