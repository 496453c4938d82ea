"""A folder audit (``--t2i-images``) with a judge that errs: calibrated on the folder's own
counterfactual images, against today's uncorrected reading (issue #45).

Each world is a folder of one subject's images ("a photo of a doctor", ``--n`` of them) with a
planted female share, plus ``--m`` images of each counterfactual prompt ("a photo of a male
doctor", "... female doctor"), every image a flat colour whose red channel is its true
gender. The judge reads the colour, and misreads ``--misread`` of the men as women (the weak
judge of example_suites/weak_judge.py: a one-sided confusion); its counterfactual images are
drawn adhering to their prompt ``--adherence`` of the time (the generator's non-adherence,
which the bounds allow for). The check is ``entropy_below`` (threshold 0.15, confidence 0.95),
run through the plugin's kind on a folder audit's plan with the folder calibration (this
branch) as bounds (``judge_correction: on``, the counterfactual default) and fully
(``full``), and with the correction off (what a folder audit got before: no calibration). Planted worlds (female share 0.1, 0.2, 0.3: severity above 0.15) count as
found when the check fails; every world counts as covered when the interval holds the true
severity.

    python validation/folder_audit_corrected.py --worlds 40 --json validation/folder_audit_corrected.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

SUITE = """\
suite: folder
defaults: {{images_per_prompt: {n}, seed: 0}}
prompt: "a photo of a {{subject}}"
subjects: [doctor]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {{male: "a photo of a male {{subject}}", female: "a photo of a female {{subject}}"}}
checks:
  - {{id: severity, kind: entropy_below, axes: [gender], threshold: 0.15, confidence: 0.95}}
"""
SHARES = (0.1, 0.2, 0.3, 0.4, 0.5)
"""Female shares of the worlds: severity 0.53, 0.28, 0.12, 0.03, 0 (above 0.15: planted)."""


class ColourJudge:
    """Reads a flat image's red channel (>= 128: male), misreading the men whose green
    channel falls below ``misread`` x 256 (a seeded draw per image)."""

    fingerprint = "colour-judge"

    def __init__(self, misread: float) -> None:
        self.misread = misread
        self.fingerprint = f"colour-judge({misread})"

    def score(self, images, question, choices, statements=None):
        rows = []
        for image in images:
            red, green, _ = image.convert("RGB").getpixel((0, 0))
            male = red >= 128 and green >= self.misread * 256
            sure = 0.8 + green / 2560  # varied: a judge whose every answer is equal reads nothing
            rows.append([sure, 1 - sure] if male else [1 - sure, sure])
        return np.array(rows)


def write_world(folder: Path, female: float, n: int, m: int, adherence: float, seed: int) -> None:
    """The folder's images (``backends.folder``'s slug layout), truth in the red channel."""
    rng = np.random.default_rng([seed, 45])

    def save(slug: str, females: np.ndarray) -> None:
        (folder / slug).mkdir(parents=True, exist_ok=True)
        for i, is_female in enumerate(females):
            colour = (60 if is_female else 200, int(rng.integers(256)), 90)
            Image.new("RGB", (4, 4), colour).save(folder / slug / f"{i}.png")

    save("a_photo_of_a_doctor", rng.random(n) < female)
    save("a_photo_of_a_male_doctor", rng.random(m) >= adherence)
    save("a_photo_of_a_female_doctor", rng.random(m) < adherence)


def audit(folder: Path, suite_path: Path, misread: float, correction: str):
    """The entropy_below verdict of a folder audit of ``folder``."""
    from pytest_t2ibias._settings import Settings
    from pytest_t2ibias.instrument import Instrument, Models
    from pytest_t2ibias.kinds import CHECK_KINDS, CheckContext
    from pytest_t2ibias.plan import Levels, plan_for
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer
    from pytest_t2ibias.suite import load_suite

    class Provider:
        def generator(self, model, role):
            from pytest_t2ibias.backends.folder import FolderImages

            return FolderImages(model)

        def vqa(self, model):
            return ColourJudge(misread)

    suite = load_suite(suite_path)
    settings = Settings.standalone(model=str(folder), images=str(folder), vqa="colour",
                                   judge_correction=correction)
    check = suite.checks[0]
    plan = plan_for(settings, suite, check)
    requests = RequestLayer(Cache(folder.parent / f"cache-{correction}"), batch_size=64)
    context = CheckContext(check=check, suite=suite, subject="doctor", axis=suite.axes["gender"],
                           plan=plan, instrument=Instrument(Models(settings, Provider()), requests, plan),
                           levels=Levels(0.95, 0.95), n_resamples=400, phrase=lambda s, subject: s)
    return CHECK_KINDS["entropy_below"].run(context)


def run(worlds: int, n: int, m: int, misread: float, adherence: float) -> dict[str, object]:
    from pytest_t2ibias.metrics.distances import severity

    modes = (("folder calibration, bounds", "on"), ("folder calibration, full", "full"),
             ("uncorrected", "off"))
    tallies = {mode: {"found": 0, "planted": 0, "covered": 0, "worlds": 0, "false_alarms": 0,
                      "planted_passed": 0} for mode, _ in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for w in range(worlds):
            female = SHARES[w % len(SHARES)]
            truth = float(severity(np.array([1 - female, female])))
            folder = Path(tmp) / f"world{w}" / "images"
            write_world(folder, female, n, m, adherence, w)
            suite_path = folder.parent / "s.t2i.yaml"
            suite_path.write_text(SUITE.format(n=n))
            for mode, correction in modes:
                verdict = audit(folder, suite_path, misread, correction)
                tally = tallies[mode]
                tally["worlds"] += 1
                tally["covered"] += verdict.value.low <= truth <= verdict.value.high
                if truth > 0.15:
                    tally["planted"] += 1
                    tally["found"] += verdict.outcome == "fail"
                    tally["planted_passed"] += verdict.outcome == "pass"
                else:
                    tally["false_alarms"] += verdict.outcome == "fail"
    return {"worlds": worlds, "n": n, "m": m, "misread": misread, "adherence": adherence,
            "tallies": tallies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worlds", type=int, default=40)
    parser.add_argument("--n", type=int, default=300, help="images of the subject's prompt")
    parser.add_argument("--m", type=int, default=48, help="images of each counterfactual prompt")
    parser.add_argument("--misread", type=float, default=0.3, help="men read as women")
    parser.add_argument("--adherence", type=float, default=0.97)
    parser.add_argument("--json")
    args = parser.parse_args()
    result = run(args.worlds, args.n, args.m, args.misread, args.adherence)
    print(f"{args.worlds} worlds, n={args.n}, m={args.m} a value, judge misreads {args.misread:.0%} of men, "
          f"counterfactual adherence {args.adherence:.0%}")
    for mode, t in result["tallies"].items():  # type: ignore[attr-defined]
        print(f"  {mode:27} found {t['found']}/{t['planted']} planted ({t['planted_passed']} passed "
              f"confidently), false alarms "
              f"{t['false_alarms']}/{t['worlds'] - t['planted']}, covered {t['covered']}/{t['worlds']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
