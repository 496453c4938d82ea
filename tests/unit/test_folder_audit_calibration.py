"""Issue #45: a folder audit (``--t2i-images``) is calibrated on the folder's own
counterfactual images, as bounds like a generated calibration; a folder without them says so
in every row."""

from __future__ import annotations

import shutil

from support.validation_scripts import validation_script


def _world(tmp_path, misread=0.3):
    script = validation_script("folder_audit_corrected")
    folder = tmp_path / "images"
    script.write_world(folder, female=0.2, n=120, m=48, adherence=1.0, seed=3)
    suite = tmp_path / "s.t2i.yaml"
    suite.write_text(script.SUITE.format(n=120))
    return script, folder, suite


def test_a_folder_with_the_axis_counterfactual_images_is_calibrated_on_them(tmp_path):
    script, folder, suite = _world(tmp_path)
    verdict = script.audit(folder, suite, 0.3, "on")
    assert verdict.figures["judge_correction"] == "bounds"
    calibration = verdict.figures["judge_calibration"]
    assert calibration["where"] == "the folder's 48/48 counterfactual images a value of 'doctor'"
    assert calibration["confusion"]["male"]["female"] > 0  # the judge's misreading, measured
    plain = script.audit(folder, suite, 0.3, "off")
    truth = 0.278  # severity of 20% female
    assert not plain.value.low <= truth <= plain.value.high  # uncorrected: confidently wrong
    assert verdict.value.low <= truth <= verdict.value.high


def test_a_folder_without_them_says_so_in_the_row(tmp_path):
    script, folder, suite = _world(tmp_path)
    shutil.rmtree(folder / "a_photo_of_a_female_doctor")
    verdict = script.audit(folder, suite, 0.3, "on")
    assert verdict.figures["judge_correction"] == "off"
    why = verdict.figures["judge_uncorrected"]
    assert "folder holds no image of 'a photo of a female doctor'" in why and "uncorrected" in why
    assert why in verdict.message


def test_the_run_header_names_what_the_folder_cannot_calibrate(tmp_path):
    from pytest_t2ibias.kinds._judge import folder_audit_lines
    from pytest_t2ibias.suite import load_suite

    _, folder, suite = _world(tmp_path)
    assert folder_audit_lines(str(folder), [load_suite(suite)]) == []
    shutil.rmtree(folder / "a_photo_of_a_female_doctor")
    (line,) = folder_audit_lines(str(folder), [load_suite(suite)])
    assert "no counterfactual images of folder: doctor / gender" in line and "uncorrected" in line
    assert folder_audit_lines(None, [load_suite(suite)]) == []
