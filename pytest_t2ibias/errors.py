"""Every error the plugin raises on purpose, in one place.

Two roots. ``CheckError``: a check that cannot reach a verdict (a model, cache, lock file or
backend that cannot be used); pytest reports it as an ERROR, never as a verdict.
``SuiteError``: a malformed suite, rendered ``path:line: message`` at collection. The saved-run
errors (``RunError``, ``CriterionError``) are usage errors of the command line and options.
Two budgets stop work before it grows: ``SuiteTooLarge`` (a YAML file) and
``PlanningOverBudget`` (power planning's simulations), each a ``SuiteError`` where it is met.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class CheckError(Exception):
    """A check that cannot reach a verdict: a model that will not load or is not named, a
    folder with no images, an unusable cache or lock file, a backend breaking its contract.

    pytest reports it as an ERROR, never a failure, a pass or an expected failure (the
    session's ``pytest_runtest_makereport``): an xfail mark expects the model to be biased,
    not the instrument to be broken. Every plugin exception of that sort derives from it.
    """


class BackendError(CheckError):
    """A model or image source that cannot be used, said in the user's terms.

    The message names the model id or path, the option that named it (e.g. ``--t2i-model``)
    and what to do. ``original`` keeps the library exception for debugging without
    printing its traceback from deep inside diffusers or transformers. ``first``: for a load
    failure said again in its first clause (the next check that needs the same model), the
    whole error, for whoever has not said it yet (the session plan hands it to its item).
    """

    def __init__(self, message: str, *, original: BaseException | None = None,
                 first: BackendError | None = None) -> None:
        super().__init__(message)
        self.original = original
        self.first = first


class MissingImages(BackendError):
    """A folder of images (``--t2i-images``) holds no image for a requested prompt and index:
    a check may do without those images (OpenBias' judge audit), where it can say so."""


class ProbeMismatchError(BackendError):
    """A saved probe was trained on a different generator, layer, scheduler, size or steps."""


class SuiteError(ValueError):
    """One problem in a suite file, rendered ``path:line: message``.

    The loader reports every problem of a file at once: the raised error is the first (by
    line) and ``problems`` lists all of them; ``str()`` renders them one per line, so the
    message survives pytest-xdist, which ships collection errors as strings.
    """

    def __init__(self, path: Path | str, line: int, message: str, column: int | None = None):
        self.path = Path(path)
        self.line = line
        self.message = message
        self.column = column
        self.problems: tuple[SuiteError, ...] = (self,)
        super().__init__(self.headline)

    @property
    def headline(self) -> str:
        return self._headline(self.path)

    def __str__(self) -> str:
        return "\n".join(problem.headline for problem in self.problems)

    def render(self, relative_to: Path | None = None) -> str:
        """All problems, one per line, with paths relative to ``relative_to`` where inside it."""
        return "\n".join(problem._headline(_relative(problem.path, relative_to))
                         for problem in self.problems)

    def _headline(self, path: Path) -> str:
        where = f"{path}:{self.line}" + (f":{self.column}" if self.column else "")
        return f"{where}: {self.message}"

    @classmethod
    def combine(cls, problems: Iterable[SuiteError]) -> SuiteError:
        """One error standing for all ``problems`` (sorted by line); they must not be empty."""
        ordered = sorted(problems, key=lambda problem: problem.line)
        first = ordered[0]
        first.problems = tuple(ordered)
        return first


def _relative(path: Path, root: Path | None) -> Path:
    if root is None:
        return path
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return path


class DegenerateOutput(CheckError):
    """A model's output no model under test gives on purpose: flat (all-black) images, one
    image for every seed, a judge answering every image alike."""


class ImageFolderError(CheckError):
    """A folder of images a check reads beside the model (an ideal's ``reference``, a judge
    audit's labelled folder) that holds no image, a file that is no image, or an
    ``index.jsonl`` line that cannot be read; the message names the file (and line)."""


class CacheError(CheckError):
    """The cache directory cannot be used (read-only, not creatable, a file in the way)."""


class LockfileError(SuiteError, CheckError):
    """A lock file that cannot be read, no longer matches its suite, or cannot be written."""


class ClassifierMissing(CheckError):
    """A check needs a ``--t2i-classifier`` for an axis marked ``classifier: true``."""


class MissingModel(CheckError):
    """A check needs a model no option names."""


class ContractError(CheckError):
    """A backend a hook returned lacks what its Protocol (``backends/_base.py``) requires."""


class UnreadPrompt(CheckError):
    """``--t2i-strict-prompts``: a prompt the generator's tokenizer cannot read whole (an
    unknown word, a cut); without the option the check is inconclusive instead."""


class SuiteTooLarge(Exception):
    """A suite file past one of the YAML parsing budgets (size, alias expansion, depth) or
    holding a foreign tag: raised inside the reader, and turned into a ``SuiteError`` at
    ``line`` by ``suite._yaml.load_yaml``."""

    def __init__(self, line: int, message: str, *, budget: bool = True) -> None:
        if budget:
            message += " (suites are bounded so that collecting them stays fast and small)"
        super().__init__(message)
        self.line = line
        self.message = message


class PlanningOverBudget(Exception):
    """Power planning (``images_per_prompt: auto``) would simulate past its
    ``planner.PlanningBudget`` (``limit`` choice-simulations); ``planner.auto_images`` makes
    it a ``SuiteError`` at the check's line."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class RunError(Exception):
    """A saved run that cannot be found or read: the message says what, where and what to do."""


class CriterionError(ValueError):
    """A ``--t2i-compare-fail`` expression that means nothing."""
