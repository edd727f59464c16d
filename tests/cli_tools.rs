//! `digipology test`, `replay` and `check`: the commands creators and CI use.

mod common;

use common::*;

#[test]
fn the_example_scenarios_pass_and_end_with_the_summary_line() {
    let out = run(&["test", "examples"], b"");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().last().unwrap_or("");
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    assert_no_panic(&out);
}

#[test]
fn a_broken_scenario_fails_and_points_at_the_step() {
    let game = example_copy("broken-scenario", "high-card");
    let file = game.join("tests/rounds.json");
    let text = std::fs::read_to_string(&file).expect("scenario");
    std::fs::write(
        &file,
        text.replace("\"storage.main.rounds\": 1", "\"storage.main.rounds\": 5"),
    )
    .expect("edit");
    let out = run(&["test", game.to_str().unwrap_or_default()], b"");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("FAIL") && text.contains("rounds.json"),
        "{text}"
    );
    assert!(
        text.contains("step 3: state storage.main.rounds: expected 5, got 1"),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap_or("")
            .ends_with("0 passed, 1 failed"),
        "{text}"
    );
    let junit = run(
        &[
            "test",
            game.to_str().unwrap_or_default(),
            "--format",
            "junit",
        ],
        b"",
    );
    let xml = String::from_utf8_lossy(&junit.stdout);
    assert!(
        xml.contains("<testsuites") && xml.contains("<failure message=\"step 3"),
        "{xml}"
    );
}

#[test]
fn replay_verifies_a_record_and_names_the_sequence_of_an_edited_payload() {
    let dir = scratch("replay");
    let record = dir.join("run.jsonl");
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            "examples/basics/actions.jsonl",
            "--record",
            record.to_str().unwrap_or_default(),
        ],
        b"",
    );
    assert!(out.status.success());
    let ok = run(&["replay", record.to_str().unwrap_or_default()], b"");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("verified"));
    // Edit one payload: the counter.add of 3 becomes 4.
    let text = std::fs::read_to_string(&record).expect("record");
    let mut edited_seq = None;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("line");
            if v["action"]["type"] == "counter.add"
                && v["action"]["payload"]["amount"] == 3
                && edited_seq.is_none()
            {
                v["action"]["payload"]["amount"] = serde_json::json!(4);
                edited_seq = v["seq"].as_u64();
            }
            v.to_string()
        })
        .collect();
    let edited = write(&dir, "edited.jsonl", (lines.join("\n") + "\n").as_bytes());
    let bad = run(&["replay", edited.to_str().unwrap_or_default()], b"");
    assert_eq!(bad.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&bad.stdout);
    let seq = edited_seq.expect("the record has the edited action");
    assert!(
        msg.contains(&format!("diverged at sequence {seq} (counter.add")),
        "{msg}"
    );
    assert!(
        msg.contains("differing state paths: entities.score_north"),
        "{msg}"
    );
    // A record of the first format (its hashes made the old way) is
    // refused with the reason, not reported as a divergence.
    let old = text.replacen("\"record\":2", "\"record\":1", 1);
    assert_ne!(old, text, "the header names its format");
    let old = write(&dir, "format1.jsonl", old.as_bytes());
    let refused = run(&["replay", old.to_str().unwrap_or_default()], b"");
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("a record of format 1"), "{err}");
}

#[test]
fn check_names_every_problem_with_file_and_line() {
    let dir = scratch("check");
    let game = dir.join("bad");
    copy_dir(&root().join("examples/high-card"), &game);
    let manifest = game.join("game.json");
    let mut g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).expect("game")).expect("json");
    let score = g["entities"]
        .as_array()
        .and_then(|l| l.iter().position(|e| e["id"] == "score_south"))
        .expect("score_south");
    g["entities"][score]["components"]["dice"] = serde_json::json!({});
    g["scripts"]
        .as_array_mut()
        .expect("scripts")
        .push(serde_json::json!({"id": "extra", "file": "scripts/missing.lua"}));
    g["scripts"]
        .as_array_mut()
        .expect("scripts")
        .push(serde_json::json!({"id": "broken", "file": "scripts/broken.lua"}));
    let text = serde_json::to_string_pretty(&g).expect("pretty");
    std::fs::write(&manifest, &text).expect("write");
    write(
        &game,
        "scripts/broken.lua",
        b"function on_start(event)\n  local x = = 1\nend\n",
    );
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .map(|i| i + 1)
            .unwrap_or(0)
    };
    let out = run(&["check", game.to_str().unwrap_or_default()], b"");
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    let g = game.display().to_string();
    assert!(
        report.contains(&format!("{g}/game.json:{}: ", line_of("\"dice\"")))
            && report.contains("unknown component \"dice\""),
        "{report}"
    );
    assert!(
        report.contains(&format!("{g}/game.json:{}: ", line_of("missing.lua")))
            && report.contains("missing.lua does not exist"),
        "{report}"
    );
    assert!(
        report.contains(&format!("{g}/scripts/broken.lua:2: syntax error")),
        "{report}"
    );
    assert!(report.contains("3 problems found"), "{report}");
    assert_no_panic(&out);
    let ok = run(&["check", "examples/high-card"], b"");
    assert!(ok.status.success());
}

/// A record that cannot be written is named as the record, not as the
/// events file (both are buffered writers the room fills).
#[cfg(target_os = "linux")]
#[test]
fn a_record_that_cannot_be_written_names_the_record_file() {
    let dir = scratch("record-full");
    let events = dir.join("events.jsonl");
    let out = run(
        &[
            "run",
            "examples/basics",
            "--actions",
            "examples/basics/actions.jsonl",
            "--events",
            events.to_str().unwrap_or_default(),
            "--record",
            "/dev/full",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/dev/full: No space left"), "{err}");
    assert!(!err.contains("events.jsonl"), "{err}");
}
