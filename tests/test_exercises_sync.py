"""exercises/ is generated from solutions/: the generator's rules, and that the files are fresh."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from support import ROOT

from attn_course.tools.exercises import main, make_exercise, stale_exercises, strip_solutions

STUB = 'raise NotImplementedError("your code here")'


def test_exercises_are_in_sync_with_solutions():
    stale = stale_exercises(ROOT / "solutions", ROOT / "exercises")
    assert not stale, f"stale exercise notebooks {stale}: run `make exercises`"


def test_nested_regions_keep_their_indentation():
    source = "\n".join(
        [
            "class Head:",
            "    def forward(self, x):",
            "        # BEGIN SOLUTION",
            "        y = x * 2",
            "        return y",
            "        # END SOLUTION",
            "",
            "def helper():",
            "    for i in range(3):",
            "        # BEGIN SOLUTION",
            "        print(i)",
            "        # END SOLUTION",
            "    return 1",
        ]
    )
    assert strip_solutions(source) == "\n".join(
        [
            "class Head:",
            "    def forward(self, x):",
            f"        {STUB}",
            "",
            "def helper():",
            "    for i in range(3):",
            f"        {STUB}",
            "    return 1",
        ]
    )


def test_text_after_the_colon_replaces_the_region():
    source = "# BEGIN SOLUTION: answer = ...\nanswer = 24\n# END SOLUTION\nprint(answer)"
    assert strip_solutions(source) == "answer = ...\nprint(answer)"


def test_source_without_markers_is_unchanged():
    source = 'check("causal_mask", causal_mask)\n'
    assert strip_solutions(source) == source


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("x = 1\n# BEGIN SOLUTION\ny = 2", "line 2: '# BEGIN SOLUTION' has no matching"),
        ("y = 2\n# END SOLUTION", "line 2: '# END SOLUTION' without a '# BEGIN SOLUTION'"),
        ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION", "line 2: '# BEGIN SOLUTION' inside"),
        ("y = 2  # BEGIN SOLUTION\n# END SOLUTION", "line 1: a solution marker must be alone"),
    ],
    ids=["unterminated", "unopened", "nested", "not-alone"],
)
def test_marker_mistakes_are_clear_errors(source, error):
    with pytest.raises(ValueError, match=error):
        strip_solutions(source)


def tiny_solution() -> nbformat.NotebookNode:
    """Markdown, a solution cell with an output, a solution-only cell and a check cell."""
    solved = new_code_cell(
        "def double(x):\n    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION",
        execution_count=3,
        outputs=[new_output("stream", name="stdout", text="hi\n")],
        metadata={"tags": ["keep-me"]},
    )
    discussion = new_markdown_cell("Why 2 * x works", metadata={"tags": ["solution-only"]})
    return new_notebook(
        cells=[
            new_markdown_cell("# Doubling"),
            solved,
            discussion,
            new_code_cell('check("double", double)'),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )


def test_make_exercise_strips_solutions_outputs_and_solution_only_cells():
    solution = tiny_solution()
    exercise = make_exercise(solution)
    assert [cell.source for cell in exercise.cells] == [
        "# Doubling",
        f"def double(x):\n    {STUB}",
        'check("double", double)',
    ]
    assert exercise.cells[1].outputs == [] and exercise.cells[1].execution_count is None
    assert exercise.cells[1].metadata == {"tags": ["keep-me"]}
    assert exercise.metadata == solution.metadata
    assert "return 2 * x" in solution.cells[1].source  # the solution itself is untouched


def test_unterminated_marker_names_the_cell():
    solution = tiny_solution()
    solution.cells[1].source = "# BEGIN SOLUTION\nx = 1"
    with pytest.raises(ValueError, match="code cell 2, line 1"):
        make_exercise(solution)


def test_command_writes_checks_and_removes_orphans(tmp_path, capsys):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    exercises.mkdir()
    nbformat.write(tiny_solution(), solutions / "01_tiny.ipynb")
    (exercises / "09_orphan.ipynb").write_text("{}", encoding="utf-8")
    folders = ["--solutions", str(solutions), "--exercises", str(exercises)]

    assert main([*folders, "--check"]) == 1
    err = capsys.readouterr().err
    assert "01_tiny.ipynb" in err and "09_orphan.ipynb" in err
    assert main(folders) == 0
    assert sorted(p.name for p in exercises.iterdir()) == ["01_tiny.ipynb"]
    written = nbformat.read(exercises / "01_tiny.ipynb", as_version=4)
    assert written.cells[1].source == f"def double(x):\n    {STUB}"
    assert main([*folders, "--check"]) == 0
