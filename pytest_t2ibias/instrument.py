"""What the methods measure through: generate images, read attributes off them, ideals.

The methods (``methods/``) receive an ``Instrument`` and never see pytest, the facade or the
options. It owns the roles -> backends mapping (``Models``), the request layer (memo + disk
cache), the person filter, multi-part axes and ideals measured on reference images; it knows
no method. Its ``Plan`` says how it samples (models, images per prompt, seed, steps,
guidance), resolved by ``plan.plan_for`` before the method runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from ._test_call import Sightings
from ._types import ABSTAINED, FILTERED, Answers, GeneratedImage, ImageRequest, ImageSet
from .errors import ContractError, ImageFolderError, MissingModel

if TYPE_CHECKING:
    from ._settings import Settings
    from .backends._base import Answerer, Embedder, Generator, LanguageModel
    from .plan import Plan
    from .suite_spec import AxisSpec, FilterSpec

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp"})


CONTRACTS: dict[str, tuple[tuple[str, str], ...]] = {
    "generator": (("fingerprint", "fingerprint: str (everything that changes the pixels)"),
                  ("generate", "generate(requests: list[ImageRequest]) -> list[PIL.Image]")),
    "vqa": (("fingerprint", "fingerprint: str"),
            ("score", "score(images, question, choices, statements=None) -> (n, C) array")),
    "classifier": (("fingerprint", "fingerprint: str"),
                   ("score", "score(images, question, choices, statements=None) -> (n, C) array")),
    "llm": (("fingerprint", "fingerprint: str"),
            ("log_likelihood", "log_likelihood(texts) -> array"),
            ("complete", "complete(prompt, max_new_tokens=32) -> str")),
}
"""What each ``pytest_t2ibias_make_*`` hook's object must have: the Protocols of
``backends/_base.py``, spelled out here so checking them imports no backend (no torch)."""


def check_contract(backend: Any, kind: str, model: str) -> Any:
    """``backend`` if it offers what ``kind`` needs, else a one-paragraph ``ContractError``
    naming the hook, the object's class and file, and what is missing."""
    hook = f"pytest_t2ibias_make_{kind}"
    if backend is None:
        raise ContractError(f"no {hook} implementation returned a backend for model {model!r}; "
                            f"a conftest.py hook must return an object (return None only to "
                            f"let the built-ins try)")
    missing = [(name, signature) for name, signature in CONTRACTS[kind]
               if not hasattr(backend, name)
               or (name != "fingerprint" and not callable(getattr(backend, name)))]
    fingerprint = getattr(backend, "fingerprint", "")
    if not missing and isinstance(fingerprint, str) and fingerprint:
        return backend
    cls = type(backend)
    where = getattr(sys.modules.get(cls.__module__), "__file__", None) or cls.__module__
    lacks = "; ".join(signature for _, signature in missing) or "fingerprint: a non-empty str"
    raise ContractError(f"{hook} returned an object of class {cls.__qualname__} (defined in "
                        f"{where}) for model "
                        f"{model!r}, which lacks {lacks}: add it (the {kind} contract, "
                        f"docs/ARCHITECTURE.md 'Backends'), or return None to let the "
                        f"built-ins make the {kind}")


class Models:
    """Roles -> backends, each made on first use by a provider (pytest's hooks in a run,
    the built-ins in a script); a backend whose every result is cached is never loaded."""

    def __init__(self, settings: Settings, provider: Any) -> None:
        self.settings = settings
        self.provider = provider
        self._generators: dict[tuple[str, str, str], Generator] = {}
        self._classifiers: dict[str, Answerer] = {}
        self._vqa: Answerer | None = None
        self._llm: LanguageModel | None = None
        self._eval_llm: LanguageModel | None = None
        self._failed: dict[tuple[str, str], BaseException] = {}
        self.loads: dict[str, int] = {}
        """Backends made so far, by role ("llm", "eval_llm", ...): a warm run makes none."""

    def _make(self, kind: str, model: str, make: Callable[[], Any]) -> Any:
        """``make()`` checked against the ``kind``'s contract; a failure is kept and raised
        again for every later check (one load attempt a session, one paragraph each time)."""
        failed = self._failed.get((kind, model))
        if failed is not None:
            raise failed.with_traceback(None)
        try:
            return check_contract(make(), kind, model)
        except Exception as error:
            self._failed[(kind, model)] = error
            raise

    def generator(self, role: str, model: str | None,
                  options: dict[str, Any] | None = None) -> Generator:
        """One generator per (role, model, loading options), so suites naming different
        ``models:`` share a process."""
        if not model:
            option = "--t2i-model (or --t2i-images)" if role == "candidate" else "--t2i-baseline-model"
            raise MissingModel(f"this check generates images but {option} is not set "
                               f"(command line, ini key {option.split()[0][2:].replace('-', '_')}, "
                               f"or the suite's models.{role})")
        options = dict(options or {})
        key = (role, model, repr(sorted(options.items())))
        if key not in self._generators:
            # a provider that predates loading options takes (model, role): asked so when none
            make = ((lambda: self.provider.generator(model, role, options)) if options
                    else (lambda: self.provider.generator(model, role)))
            self._generators[key] = self._make("generator", model, make)
        return self._generators[key]

    @property
    def vqa(self) -> Answerer:
        if self._vqa is None:
            if not self.settings.vqa:
                raise MissingModel("this check asks questions about images but --t2i-vqa is not "
                                   "set (command line or ini key t2i_vqa)")
            model = self.settings.vqa
            self._vqa = self._make("vqa", model, lambda: self.provider.vqa(model))
        return self._vqa

    def has_classifier(self, axis: str) -> bool:
        return axis in self.settings.classifiers

    def classifier(self, axis: str) -> Answerer:
        if axis not in self._classifiers:
            model = self.settings.classifiers.get(axis)
            if model is None:
                known = ", ".join(sorted(self.settings.classifiers)) or "none"
                raise MissingModel(f"no --t2i-classifier for axis {axis!r} (configured: {known}); "
                                   f"add --t2i-classifier={axis}=PATH")
            self._classifiers[axis] = self._make(
                "classifier", model, lambda: self.provider.classifier(axis, model))
        return self._classifiers[axis]

    @property
    def llm(self) -> LanguageModel:
        if self._llm is None:
            if not self.settings.llm:
                raise MissingModel("this check needs a language model but --t2i-llm is not set "
                                   "(command line or ini key t2i_llm)")
            model = self.settings.llm
            self._llm = self._make("llm", model, lambda: self.provider.llm(model))
            self.loads["llm"] = self.loads.get("llm", 0) + 1
        return self._llm

    @property
    def eval_llm(self) -> LanguageModel:
        """The second LM (``--t2i-eval-llm``), made by the same ``pytest_t2ibias_make_llm``
        hook with its own model id: BGPS reports found prompts' perplexity under it."""
        if self._eval_llm is None:
            if not self.settings.eval_llm:
                raise MissingModel("this check reports perplexity but --t2i-eval-llm is not set "
                                   "(command line or ini key t2i_eval_llm)")
            model = self.settings.eval_llm
            self._eval_llm = self._make("llm", model, lambda: self.provider.llm(model))
            self.loads["eval_llm"] = self.loads.get("eval_llm", 0) + 1
        return self._eval_llm

    def made(self) -> list[dict[str, str]]:
        """The backends made so far: role, model and fingerprint each (the run header's
        models and judges); none on a warm run that found every result cached."""
        settings = self.settings
        made: list[tuple[str, str | None, Any]] = [
            ("generator:" + role, model, backend) for (role, model, _), backend in self._generators.items()]
        made += [("vqa", settings.vqa, self._vqa)] if self._vqa else []
        made += [(f"classifier:{axis}", settings.classifiers.get(axis), backend)
                 for axis, backend in self._classifiers.items()]
        made += [("llm", settings.llm, self._llm)] if self._llm else []
        made += [("eval_llm", settings.eval_llm, self._eval_llm)] if self._eval_llm else []
        from .backends._lazy import device_record

        return [{"role": role, "model": str(model or ""),
                 "fingerprint": str(getattr(backend, "fingerprint", "")),
                 **device_record(backend)}  # where it ran: the device used, not "auto"
                for role, model, backend in made]


class Requests(Protocol):
    """What an ``Instrument`` asks of its request layer: ``store.request_layer.RequestLayer``,
    or prefetch's recorder of the answers a check would ask."""

    def images(self, generator: Generator, requests: Sequence[ImageRequest]) -> ImageSet: ...

    def answers(self, answerer: Answerer, images: ImageSet, question: str,
                choices: Sequence[str], statements: Sequence[str] | None = None, *,
                abstain_below: float = 0.0) -> Answers: ...

    def image_embeddings(self, embedder: Embedder, images: ImageSet) -> np.ndarray: ...

    def text_embeddings(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Instrument:
    """Images and answers for one ``Plan``; cheap to copy with another plan.
    ``sightings``, when given, notes what the judges saw (the report's image grids)."""

    models: Models
    requests: Requests
    plan: Plan
    sightings: Sightings | None = field(default=None, compare=False)

    def with_plan(self, plan: Plan) -> Instrument:
        return replace(self, plan=plan)

    @property
    def images_per_prompt(self) -> int:
        return self.plan.images_per_prompt

    @property
    def llm(self) -> LanguageModel:
        return self.models.llm

    # -- images -------------------------------------------------------------------------------

    def images(self, prompts: str | Sequence[str], *, role: str = "candidate",
               per_prompt: int | None = None) -> ImageSet:
        """``per_prompt`` (default: the plan's) images of every prompt; image i of every
        prompt shares its noise (paired counterfactuals, baseline vs candidate)."""
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        plan = self.plan
        n = per_prompt or plan.images_per_prompt
        requests = [ImageRequest(prompt, plan.seed, i, **plan.sampling)
                    for prompt in prompts for i in range(n)]
        generator = self.generator(role)
        images = self.requests.images(generator, requests)
        if self.sightings is not None:
            self.sightings.roles.update((item.key, role) for item in images)
            # issue #27: words the generator never read make no verdict (figures.unread_prompts)
            if hasattr(generator, "prompt_problems"):
                self.sightings.unread.update(generator.prompt_problems(prompts))
        return images

    def generator(self, role: str = "candidate") -> Generator:
        """The ``role``'s generator under the plan's steps, guidance and size (not loaded yet:
        a lazy backend loads on its first uncached image, or ``.loaded()``)."""
        plan = self.plan
        generator = self.models.generator(role, plan.model(role), plan.options(role))
        size = {"height": plan.height, "width": plan.width} if plan.height or plan.width else {}
        if (plan.steps or plan.guidance is not None or size) and hasattr(generator, "with_options"):
            generator = generator.with_options(steps=plan.steps, guidance_scale=plan.guidance, **size)
        return generator

    # -- answers ------------------------------------------------------------------------------

    def ask(self, images: ImageSet, question: str, choices: Sequence[str],
            statements: Sequence[str] | None = None) -> Answers:
        """The VQA model's answers, one of ``choices`` per image."""
        return self._seen(question, self._ask(images, question, choices, statements))

    def classify(self, axis: str, images: ImageSet, choices: Sequence[str]) -> Answers:
        """The ``axis`` classifier's answers."""
        return self._seen(axis, self._classify(axis, images, choices))

    def _ask(self, images: ImageSet, question: str, choices: Sequence[str],
             statements: Sequence[str] | None = None) -> Answers:
        return self.requests.answers(self.models.vqa, images, question, choices, statements)

    def _classify(self, axis: str, images: ImageSet, choices: Sequence[str]) -> Answers:
        return self.requests.answers(self.models.classifier(axis), images,
                                     f"<classify {axis}>", choices)

    def _seen(self, about: str, answers: Answers) -> Answers:
        if self.sightings is not None:
            self.sightings.saw(about, answers)
        return answers

    def image_embeddings(self, images: ImageSet) -> np.ndarray:
        """(n, d) unit embeddings of ``images`` by the run's judge (``--t2i-vqa``, a
        contrastive model): what the cost checks read (``metrics.costs``), cached as answers."""
        return self.requests.image_embeddings(self._embedder(), images)

    def text_embeddings(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) unit embeddings of ``texts`` by the run's judge (prompts, for CLIPScore)."""
        return self.requests.text_embeddings(self._embedder(), list(texts))

    def _embedder(self) -> Embedder:
        judge = self.models.vqa
        if not (hasattr(judge, "embed_images") and hasattr(judge, "embed_texts")):
            raise ContractError(f"the judge {self.models.settings.vqa} ({type(judge).__name__}) "
                                f"offers no embed_images/embed_texts: the cost checks read a "
                                f"contrastive judge's embeddings (CLIP, SigLIP); give "
                                f"--t2i-vqa such a model, or add both methods to the hook's "
                                f"object (each (n, d) arrays)")
        return cast("Embedder", judge)  # the two methods checked; no isinstance: a lazy
        # judge would compute its fingerprint (the Protocol's third member) to answer it

    def attributes(self, images: ImageSet, axis: AxisSpec, filter: FilterSpec | None = None) -> Answers:
        """Read ``axis`` off every image: classifier when configured for it, else VQA;
        multi-part axes as one yes/no question per part. Images the filter drops are
        labelled ``FILTERED`` (counted and reported, never silently lost)."""
        floor = self.abstain_below(axis)
        if axis.parts:
            answers = self._multi_part(images, axis, floor)
        elif self.models.has_classifier(axis.name):
            answers = self.requests.answers(self.models.classifier(axis.name), images,
                                            f"<classify {axis.name}>", axis.choices,
                                            abstain_below=floor)
        else:
            answers = self.requests.answers(self.models.vqa, images, axis.question, axis.choices,
                                            _in_order(axis.statements, axis.choices),
                                            abstain_below=floor)
        if filter is not None:
            kept = self.keep_mask(images, filter)
            labels = np.where(kept, answers.labels, FILTERED)
            answers = Answers(answers.question, answers.choices, labels, answers.probabilities,
                              answers.prompts, answers.image_keys)
        return self._seen(axis.name, answers)

    def abstain_below(self, axis: AxisSpec) -> float:
        """The probability below which the judge abstains on ``axis``: the axis' own, else the
        run's, else 0 (every image answered)."""
        if axis.abstain_below is not None:
            return axis.abstain_below
        return self.plan.abstain_below or 0.0

    def judge_name(self, axis: AxisSpec) -> str:
        """Who reads ``axis`` (``judge_name``)."""
        return judge_name(self.models.settings, axis)

    def keep_mask(self, images: ImageSet, filter: FilterSpec) -> np.ndarray:
        """True for the images the filter keeps (the person filter: "is there a person?")."""
        verdicts = self._ask(images, filter.question, filter.choices,
                             _in_order(filter.statements, filter.choices))
        kept: np.ndarray = verdicts.labels == filter.choices.index(filter.keep)
        return kept

    def _multi_part(self, images: ImageSet, axis: AxisSpec, floor: float = 0.0) -> Answers:
        """Disability-style axes, each part asked on its own (BiasConnect A.2): of the parts
        answered "yes", the one the judge is surest of (not the first listed); ``none_value``
        when every part is answered "no"; an abstention when no part is a "yes" and one could
        not be answered, or was answered with probability below ``floor`` (an image the judge
        cannot read is not "fit")."""
        choices = axis.choices
        n = len(images)
        yes_probability = np.full((n, len(axis.parts)), np.nan)
        confident = np.zeros((n, len(axis.parts)), dtype=bool)
        for j, part in enumerate(axis.parts):
            reply = self._ask(images, part.question, ("yes", "no"),
                              _in_order(part.statements, ("yes", "no")))
            scores = np.asarray(reply.probabilities, dtype=float).reshape(n, 2)
            yes_probability[:, j] = scores[:, 0]
            confident[:, j] = np.nan_to_num(scores.max(axis=1), nan=-1.0) >= max(floor, 0.0)
        said_yes = confident & (np.nan_to_num(yes_probability, nan=0.0) > 0.5)
        all_no = (confident & ~said_yes).all(axis=1)
        surest = np.argmax(np.where(said_yes, yes_probability, -1.0), axis=1)
        part_labels = np.array([choices.index(part.value) for part in axis.parts])
        labels = np.where(said_yes.any(axis=1), part_labels[surest],
                          np.where(all_no, choices.index(axis.none_value), ABSTAINED)).astype(int)
        probabilities = np.zeros((n, len(choices)))
        probabilities[:, part_labels] = np.nan_to_num(yes_probability, nan=0.0)
        probabilities[:, choices.index(axis.none_value)] = 1.0 - probabilities.max(axis=1)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return Answers(axis.question, choices, labels, probabilities,
                       tuple(i.prompt for i in images), tuple(i.key for i in images))

    # -- ideals -------------------------------------------------------------------------------

    def ideal(self, axis: AxisSpec, filter: FilterSpec | None = None) -> Any:
        """D* of an axis: uniform, given, or measured on real reference images (BiasConnect
        A.10) with the same extractor and filter as the generated images."""
        if isinstance(axis.ideal, dict) and "reference" in axis.ideal:
            from .metrics import pooled_shares

            answers = self.attributes(reference_images(Path(axis.ideal["reference"])), axis, filter)
            return pooled_shares([answers.labels], len(axis.choices))
        return axis.ideal


def judge_name(settings: Settings, axis: AxisSpec) -> str:
    """Who reads ``axis``: the classifier configured for it, else the VQA model (the name a
    judge calibration is kept under, and ``--t2i-plan`` looks it up by)."""
    if not axis.parts and axis.name in settings.classifiers:
        return f"classifier {settings.classifiers[axis.name]}"
    return f"VQA {settings.vqa}"


def reference_images(folder: Path) -> ImageSet:
    """Every image under ``folder``, as an ``ImageSet`` the extractors can read."""
    from .store.cache import content_hash

    paths = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES
                   and p.is_file())
    if not paths:
        raise ImageFolderError(
            f"the ideal's reference folder {folder} holds no images (.png, .jpg, .jpeg, "
            f".webp, searched in its subfolders too): add the reference images, or give the "
            f"axis another ideal (uniform, or shares per choice)")
    items = []
    for i, path in enumerate(paths):
        picture = read_image(path, "an ideal's reference image")
        digest = content_hash(picture)
        items.append(GeneratedImage(f"reference:{folder}", 0, i, picture, digest, digest))
    return ImageSet(tuple(items))


def read_image(path: Path, what: str) -> Any:
    """The RGB image at ``path``; ``ImageFolderError`` naming it if it is none."""
    from PIL import Image

    if not path.is_file():  # absent, or a FIFO whose open would wait forever
        raise ImageFolderError(f"{path} ({what}) is not a file; add the image or remove "
                               f"what names it")
    try:
        with Image.open(path) as opened:
            return opened.convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ImageFolderError(f"{path} ({what}) cannot be read as an image ({exc}); replace "
                               f"or remove it") from None


def _in_order(statements: dict[str, str], choices: Sequence[str]) -> list[str] | None:
    """A suite's caption per choice, in the choices' order (None: the answerer's default)."""
    return [statements[choice] for choice in choices] if statements else None
