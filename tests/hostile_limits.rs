//! Must show (issue 36): the limits a game sets have host ceilings that
//! `check`, `run`, `serve` and `simulate` hold it to, naming the file and
//! the field (finding 4); a game that stalls is stopped by `simulate` and
//! `watch` too (finding 1); and the small ones (finding 8) — a timer whose
//! script is gone fails the same way whether or not the game has scripts,
//! and a storage key that is not UTF-8 says so.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{bin, lines, run, scratch, wait_for};
use serde_json::{json, Value};
use serving::run_briefly;

/// A game `id` under `dir` with one button `go`, `limits` as given, and
/// `script` as its global script (none when empty); a match contract when
/// `matched`.
fn game(dir: &Path, id: &str, limits: Option<Value>, script: &str, matched: bool) -> PathBuf {
    let game = dir.join(id);
    std::fs::create_dir_all(game.join("scripts")).expect("dirs");
    let mut manifest = json!({
        "id": id, "name": id, "version": "1.0.0", "kernelVersion": 1,
        "seats": ["a", "b"],
        "entities": [{"id": "go", "components": {"button": {}}},
                     {"id": "sign", "components": {"text": {}}}],
    });
    if let Some(l) = limits {
        manifest["limits"] = l;
    }
    if !script.is_empty() {
        manifest["scripts"] =
            json!([{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}]);
        std::fs::write(game.join("scripts/main.lua"), script).expect("script");
    }
    if matched {
        manifest["match"] = json!({"timing": {"playerTotalMs": null, "decisionLimitMs": null},
                                   "phases": {"play": ["button.press"]}});
    }
    std::fs::write(game.join("game.json"), manifest.to_string()).expect("game.json");
    game
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every command refuses `limits` with a message naming game.json, the
/// field and `needle`.
fn refused_everywhere(dir: &Path, id: &str, limits: Value, field: &str, needle: &str) {
    let g = game(
        dir,
        id,
        Some(limits),
        "function on_button_pressed(e) while true do end end",
        true,
    );
    let path = g.display().to_string();
    for args in [
        vec!["check", &path],
        vec!["run", &path],
        vec!["simulate", &path, "--matches", "1"],
    ] {
        let out = run(&args, b"");
        let said = text(&out);
        assert!(!out.status.success(), "{args:?} accepted: {said}");
        assert!(
            said.contains("game.json") && said.contains(field) && said.contains(needle),
            "{args:?}: {said}"
        );
    }
    let data = dir.join(format!("{id}-data")).display().to_string();
    let out = run_briefly(&["serve", &path, "--addr", "127.0.0.1:0", "--data", &data]);
    let said = text(&out);
    assert!(!out.status.success(), "serve started: {said}");
    assert!(
        said.contains(field) && said.contains(needle),
        "serve: {said}"
    );
}

#[test]
fn limits_above_the_hosts_ceilings_or_below_the_least_are_refused_by_every_command() {
    let dir = scratch("limits-ceilings");
    refused_everywhere(
        &dir,
        "endless",
        json!({"instructionsMax": 9_007_199_254_740_991u64, "memoryBytesMax": 20_000_000_000u64}),
        "limits.instructionsMax",
        "ceiling",
    );
    refused_everywhere(
        &dir,
        "hungry",
        json!({"memoryBytesMax": 20_000_000_000u64}),
        "limits.memoryBytesMax",
        "ceiling",
    );
    refused_everywhere(
        &dir,
        "hoarder",
        json!({"bytesMax": 1u64 << 40}),
        "limits.bytesMax",
        "ceiling",
    );
    refused_everywhere(
        &dir,
        "tiny",
        json!({"memoryBytesMax": 1000}),
        "limits.memoryBytesMax",
        "least",
    );
    refused_everywhere(
        &dir,
        "short",
        json!({"instructionsMax": 1}),
        "limits.instructionsMax",
        "least",
    );
    refused_everywhere(
        &dir,
        "unknown",
        json!({"cpuMax": 5}),
        "limits.cpuMax",
        "allowed",
    );
}

#[test]
fn an_operator_raises_a_ceiling_with_a_flag() {
    let dir = scratch("limits-flags");
    let g = game(
        &dir,
        "big",
        Some(json!({"instructionsMax": 200_000_000})),
        "function on_button_pressed(e) end",
        false,
    );
    let path = g.display().to_string();
    let out = run(&["check", &path], b"");
    assert!(!out.status.success(), "{}", text(&out));
    let out = run(
        &["check", &path, "--instructions-ceiling", "300000000"],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out));
    // A ceiling below the least a game may have is a usage error.
    let out = run(&["check", &path, "--memory-ceiling", "10"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("memory ceiling"), "{}", text(&out));
}

#[test]
fn simulate_reports_a_stalled_match_and_goes_on() {
    let dir = scratch("simulate-stall");
    let g = game(
        &dir,
        "hang",
        Some(json!({"instructionsMax": 100_000_000})),
        "function on_button_pressed(e) while true do local t = {} end end\n\
         function current_phase() return 'play' end\n",
        true,
    );
    let out_dir = dir.join("out");
    let out = run(
        &[
            "simulate",
            &g.display().to_string(),
            "--matches",
            "3",
            "--jobs",
            "1",
            "--stall-ms",
            "50",
            "--out",
            &out_dir.display().to_string(),
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out));
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("report.json")).expect("report"),
    )
    .expect("report JSON");
    let failed = report["failed"].as_array().expect("failed");
    assert_eq!(failed.len(), 3, "{report}");
    for f in failed {
        assert_eq!(f["status"], "hung", "{f}");
        assert!(f["record"].is_string(), "a hung match is saved: {f}");
    }
    assert!(
        report.to_string().contains("the game stalled"),
        "the report names the stall: {report}"
    );
}

#[test]
fn watch_recovers_when_the_stalling_script_is_fixed() {
    let dir = scratch("watch-stall");
    // A budget no loop spends in a test's lifetime (the operator raised
    // the ceiling): only the fix can end the press.
    let g = game(
        &dir,
        "slow",
        Some(json!({"instructionsMax": 1_000_000_000_000u64})),
        "function on_button_pressed(e) while true do local t = {} end end\n",
        false,
    );
    let mut child = bin()
        .args([
            "watch",
            &g.display().to_string(),
            "--instructions-ceiling",
            "1000000000000",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch starts");
    let out = lines(child.stdout.take().expect("stdout"));
    let err = lines(child.stderr.take().expect("stderr"));
    wait_for(&err, "watching");
    let press = r#"{"type":"button.press","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"go"}}"#;
    let stdin = child.stdin.as_mut().expect("stdin");
    writeln!(stdin, "{press}").expect("press");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(
        g.join("scripts/main.lua"),
        "function on_button_pressed(e) game.entity('sign'):set_text('fixed') end\n",
    )
    .expect("fix");
    wait_for(&err, "an action was stopped");
    wait_for(&err, "reloaded scripts");
    let stdin = child.stdin.as_mut().expect("stdin");
    writeln!(stdin, "{press}").expect("press");
    stdin.flush().expect("flush");
    wait_for(&out, "fixed");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_timer_whose_script_is_gone_fails_alike_with_or_without_scripts() {
    let dir = scratch("timer-gone");
    let armed = game(
        &dir,
        "armed",
        None,
        "function on_button_pressed(e) timer.after(1000, 'ring') end\nfunction ring() end\n",
        false,
    );
    let press = dir.join("press.jsonl");
    std::fs::write(
        &press,
        "{\"type\":\"button.press\",\"source\":{\"kind\":\"player\",\"playerId\":\"p1\"},\"payload\":{\"entityId\":\"go\"}}\n",
    )
    .expect("actions");
    let save = dir.join("save.json").display().to_string();
    let out = run(
        &[
            "run",
            &armed.display().to_string(),
            "--players",
            "p1",
            "--actions",
            &press.display().to_string(),
            "--save",
            &save,
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out));
    // The same game, once without scripts, once with a script lacking the
    // callback: the timer's fire is a script error both times.
    let none = dir.join("none");
    std::fs::create_dir_all(&none).expect("dir");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(armed.join("game.json")).expect("read"))
            .expect("json");
    manifest.as_object_mut().expect("object").remove("scripts");
    std::fs::write(none.join("game.json"), manifest.to_string()).expect("write");
    let other = game(
        &dir,
        "other",
        None,
        "function on_button_pressed(e) end\n",
        false,
    );
    let mut other_manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(other.join("game.json")).expect("read"))
            .expect("json");
    other_manifest["id"] = json!("armed");
    other_manifest["name"] = json!("armed");
    std::fs::write(other.join("game.json"), other_manifest.to_string()).expect("write");
    for g in [none, other] {
        let out = run(
            &[
                "run",
                &g.display().to_string(),
                "--resume",
                &save,
                "--actions",
                "-",
                "--format",
                "jsonl",
            ],
            b"",
        );
        let said = text(&out);
        assert!(out.status.success(), "{said}");
        assert!(
            said.contains("\"type\":\"script.error\"") && said.contains("ring"),
            "{}: the fire of a timer whose script is gone is a script error: {said}",
            g.display()
        );
    }
}

#[test]
fn a_storage_key_that_is_not_utf8_says_so() {
    let dir = scratch("storage-utf8");
    let g = game(
        &dir,
        "keys",
        None,
        "function on_button_pressed(e) storage['\\xff'] = 1 end\n",
        false,
    );
    let press = "{\"type\":\"button.press\",\"source\":{\"kind\":\"player\",\"playerId\":\"p1\"},\"payload\":{\"entityId\":\"go\"}}\n";
    let out = run(
        &[
            "run",
            &g.display().to_string(),
            "--players",
            "p1",
            "--actions",
            "-",
            "--format",
            "jsonl",
        ],
        press.as_bytes(),
    );
    let said = text(&out);
    assert!(
        said.contains("storage keys must be valid UTF-8 text"),
        "{said}"
    );
}
