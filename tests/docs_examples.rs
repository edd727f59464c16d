//! Every example in the documentation (README.md and docs/*.md) is executed
//! or checked, so a doc that drifts from the program fails the suite:
//!
//! - ```sh blocks: every `cargo run --release -- …` / `cargo run -- …` /
//!   `digipology …` line runs the binary from the repository root and must
//!   exit 0 (`cargo test` and `cargo bench` lines are the suite itself and are
//!   not re-run). A ```text block right after one that starts with
//!   `simulate: ` shows what those commands print: each of its lines must
//!   be a line they printed, in order.
//! - ```json blocks: an action envelope must pass the kernel's shape checks
//!   (a lookup such as `entity_not_found` is fine, `unknown_key` is not); an
//!   event must name an event type the kernel emits, with data keys it
//!   writes; a `game.json` must load; a canonical state must be canonical; a
//!   scenario runs with `digipology test` against the game named in the
//!   `<!-- game: examples/… -->` comment above it, and must pass.
//! - ```lua blocks are run by `lua-runtime/tests/docs_examples.rs`.
//! - every other block is tagged `text`; an untagged block fails here, so
//!   nothing that looks like an example escapes the checks.

mod common;
#[path = "common/serving.rs"]
mod serving;

use std::path::PathBuf;

use common::*;
use digipology_kernel::event::EVENT_TABLE;
use digipology_kernel::{state_from_game, Kernel, NoScripts};
use serde_json::{json, Value};

/// A fenced block: file, line of its opening fence, language tag, text, and
/// the `<!-- game: … -->` comment right above it (if any).
struct Block {
    file: PathBuf,
    line: usize,
    lang: String,
    text: String,
    game: Option<String>,
}

fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for file in doc_files() {
        let doc = std::fs::read_to_string(&file).expect("doc readable");
        let mut open: Option<Block> = None;
        let mut previous = "";
        for (i, line) in doc.lines().enumerate() {
            let trimmed = line.trim();
            match &mut open {
                None if trimmed.starts_with("```") => {
                    let game = previous
                        .trim()
                        .strip_prefix("<!-- game:")
                        .and_then(|r| r.strip_suffix("-->"))
                        .map(|g| g.trim().to_owned());
                    open = Some(Block {
                        file: file.clone(),
                        line: i + 1,
                        lang: trimmed.trim_start_matches('`').trim().to_owned(),
                        text: String::new(),
                        game,
                    });
                }
                Some(_) if trimmed == "```" => out.extend(open.take()),
                Some(b) => {
                    b.text.push_str(line);
                    b.text.push('\n');
                }
                None => {}
            }
            previous = line;
        }
        assert!(
            open.is_none(),
            "{}: a code block is never closed",
            file.display()
        );
    }
    out
}

fn place(b: &Block) -> String {
    format!(
        "{}:{}",
        b.file.strip_prefix(root()).unwrap_or(&b.file).display(),
        b.line
    )
}

#[test]
fn every_block_is_tagged_with_what_it_is() {
    for b in blocks() {
        assert!(
            ["sh", "json", "lua", "text"].contains(&b.lang.as_str()),
            "{}: a code block tagged {:?}; tag it sh, json or lua (checked by the tests) or text",
            place(&b),
            b.lang
        );
    }
}

/// The shell command a doc line runs, as arguments to the binary; `None`
/// for `cargo test` / `cargo bench`, which are the suite and the benches.
fn command(line: &str) -> Option<Vec<String>> {
    // `serve` runs until stopped: the server's session below starts one.
    if line.starts_with("digipology serve") || line.starts_with("cargo run -- serve") {
        return None;
    }
    let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    let rest = if line.starts_with("cargo run --release -- ") {
        &words[4..]
    } else if line.starts_with("cargo run -- ") {
        &words[3..]
    } else if line.starts_with("digipology ") {
        &words[1..]
    } else if line == "cargo test"
        || line.starts_with("cargo test ")
        || line.starts_with("cargo bench")
    {
        return None;
    } else {
        panic!("a sh example this test cannot run: {line:?} (write it as `digipology …` or `cargo run -- …`, or tag the block text)");
    };
    Some(rest.to_vec())
}

#[test]
fn every_shell_example_runs() {
    let mut ran = 0;
    let all = blocks();
    for (i, b) in all.iter().enumerate() {
        if b.lang != "sh" || is_server_doc(b) {
            continue;
        }
        let mut printed = String::new();
        for line in b.text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some(args) = command(line) else { continue };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(&args, b"");
            assert_no_panic(&out);
            assert!(
                out.status.success(),
                "{}: `{line}` exited {:?}\n{}",
                place(b),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            printed.push_str(&String::from_utf8_lossy(&out.stdout));
            ran += 1;
        }
        if let Some(shown) = all.get(i + 1).filter(|n| is_simulate_output(b, n)) {
            assert_shown_lines_printed(shown, &printed);
        }
    }
    assert!(ran >= 3, "expected the README's commands, ran {ran}");
}

/// Whether `next` is the text block right after `b` that shows what its
/// `simulate` printed (its first line is simulate's summary line).
fn is_simulate_output(b: &Block, next: &Block) -> bool {
    next.file == b.file && next.lang == "text" && next.text.starts_with("simulate: ")
}

/// Every line of `shown` is a line `simulate` printed, in order (a run's
/// figures are the same bytes on every machine, so a doc showing other
/// figures is out of date).
fn assert_shown_lines_printed(shown: &Block, printed: &str) {
    let mut lines = printed.lines();
    for want in shown.text.lines() {
        assert!(
            lines.any(|got| got == want),
            "{}: the doc shows {want:?}, which the commands above it did not print:\n{printed}",
            place(shown)
        );
    }
}

/// docs/server.md's shell examples are one curl session against a server.
fn is_server_doc(b: &Block) -> bool {
    b.file.ends_with("docs/server.md")
}

/// docs/server.md: every `sh` example, in order, as one bash session
/// (`set -euo pipefail`, so a failing `curl -sf` fails it) against a real
/// `digipology serve` on a loopback port offering the examples.
#[test]
fn the_server_docs_session_runs_against_a_real_server() {
    for tool in ["curl", "jq"] {
        let found = std::process::Command::new(tool).arg("--version").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "docs/server.md's examples need {tool} (.ci/run installs it: apt-get install -y {tool})"
        );
    }
    let data = scratch("docs-server");
    let server = serving::Server::start(&[], &data.join("d"), &[]);
    let mut script = String::from("set -euo pipefail\n");
    let mut lines = 0;
    for b in blocks()
        .iter()
        .filter(|b| b.lang == "sh" && is_server_doc(b))
    {
        for line in b.text.lines() {
            if line.trim().starts_with("digipology serve") {
                continue;
            }
            script.push_str(line);
            script.push('\n');
            lines += 1;
        }
    }
    assert!(lines >= 20, "the session is there: {lines} lines");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("DIGIPOLOGY", format!("http://{}", server.addr))
        .current_dir(root())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "docs/server.md's session failed ({:?}):\n{}\n{}\nserver:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("rock-paper-scissors"));
}

/// The JSON values of a block: the whole block, or one per line (JSONL).
fn json_values(b: &Block) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(&b.text) {
        return vec![v];
    }
    b.text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: not JSON ({e}): {l}", place(b)))
        })
        .collect()
}

/// Codes that say an action's shape is wrong (the doc is wrong), as opposed
/// to a lookup on this particular table.
const SHAPE_CODES: &[&str] = &[
    "malformed_action",
    "unknown_action_type",
    "source_not_allowed",
    "unknown_key",
    "missing_field",
    "invalid_type",
    "invalid_value",
    "not_finite",
];

fn check_action(b: &Block, action: &Value) {
    let game: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("examples/basics/game.json")).expect("basics"),
    )
    .expect("basics JSON");
    let mut k = Kernel::new(state_from_game(&game, 0).expect("basics loads"));
    let mut host = NoScripts;
    let mut setup =
        vec![json!({"type": "system.game_start", "source": {"kind": "system"}, "payload": {}})];
    for p in ["p1", "p2"] {
        setup.push(json!({"type": "system.player_joined", "source": {"kind": "system"}, "payload": {"playerId": p}}));
    }
    let is_start = action["type"] == "system.game_start";
    for a in setup.iter().take(if is_start { 0 } else { 3 }) {
        assert!(k.process_json(a, &mut host).accepted());
    }
    let out = k.process_json(action, &mut host);
    for e in &out.events {
        let line: Value = serde_json::from_str(&e.to_json_line()).expect("event JSON");
        if line["type"] == "action.rejected" {
            let code = line["data"]["code"].as_str().unwrap_or("");
            assert!(
                !SHAPE_CODES.contains(&code),
                "{}: the documented action is refused for its shape: {code}: {}\n{action}",
                place(b),
                line["data"]["message"]
            );
        }
    }
}

/// An event example must be one the kernel writes: a type in the kernel's
/// event table, with exactly that row's data keys.
fn check_event(b: &Block, event: &Value) {
    let keys: Vec<&String> = event
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        ["actionId", "data", "seq", "type"]
            .iter()
            .collect::<Vec<_>>(),
        "{}: an event has exactly seq, actionId, type, data: {event}",
        place(b)
    );
    let ty = event["type"].as_str().unwrap_or("");
    let Some(row) = EVENT_TABLE.iter().find(|r| r.type_name == ty) else {
        panic!("{}: {ty:?} is not an event type the kernel emits", place(b));
    };
    let mut want = row.data_keys();
    want.sort_unstable();
    let got: Vec<&str> = event["data"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        got,
        want,
        "{}: {ty} data has exactly the kernel's keys",
        place(b)
    );
}

fn check_scenario(b: &Block, scenario: &Value) {
    let game = b.game.as_deref().unwrap_or_else(|| {
        panic!(
            "{}: a scenario example needs `<!-- game: examples/<game> -->` on the line above it",
            place(b)
        )
    });
    let dir = scratch(&format!("doc-scenario-{}", b.line));
    let copy = dir.join("game");
    copy_dir(&root().join(game), &copy);
    let file = copy.join("tests/doc-example.json");
    std::fs::write(&file, scenario.to_string()).expect("write");
    let out = run(&["test", file.to_str().expect("path")], b"");
    assert_no_panic(&out);
    assert!(
        out.status.success(),
        "{}: the scenario fails against {game}:\n{}",
        place(b),
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn every_json_example_is_true() {
    let (mut actions, mut events, mut games, mut scenarios) = (0, 0, 0, 0);
    for b in blocks().iter().filter(|b| b.lang == "json") {
        for v in json_values(b) {
            let has = |k: &str| v.get(k).is_some();
            if has("steps") {
                check_scenario(b, &v);
                scenarios += 1;
            } else if has("seq") && has("type") && has("data") {
                check_event(b, &v);
                events += 1;
            } else if has("type") && has("source") && has("payload") {
                check_action(b, &v);
                actions += 1;
            } else if has("rng") && has("entities") {
                let parsed = digipology_kernel::Value::from_json(&v).expect("canonical values");
                assert_eq!(
                    parsed.to_canonical_json(),
                    b.text.trim(),
                    "{}: a canonical state example must be written canonically",
                    place(b)
                );
            } else if has("entities") || has("seats") || has("scripts") {
                if let Err(e) = state_from_game(&v, 0) {
                    panic!("{}: the game.json example does not load: {e}", place(b));
                }
                games += 1;
            } else {
                panic!(
                    "{}: a json example this test does not recognise (an action, an event, a game.json, a canonical state or a scenario), or tag it text:\n{v}",
                    place(b)
                );
            }
        }
    }
    assert!(actions >= 30, "only {actions} action examples checked");
    assert!(events >= 30, "only {events} event examples checked");
    assert!(games >= 2, "only {games} game.json examples checked");
    assert!(scenarios >= 1, "only {scenarios} scenario examples checked");
}

/// The rejection-code table in docs/formats.md names exactly the kernel's
/// codes (one list, generated in the kernel; the doc must follow it).
#[test]
fn the_rejection_code_table_matches_the_kernel() {
    let doc = std::fs::read_to_string(root().join("docs/formats.md")).expect("formats.md");
    let start = doc.find("## Rejection codes").expect("the section");
    let end = start + doc[start..].find("\n## ").expect("the next section");
    let mut documented = std::collections::BTreeSet::new();
    for line in doc[start..end].lines().filter(|l| l.starts_with("| `")) {
        let first_cell = line.split('|').nth(1).unwrap_or("");
        for code in first_cell.split('`').skip(1).step_by(2) {
            documented.insert(code.to_owned());
        }
    }
    let kernel: std::collections::BTreeSet<String> = digipology_kernel::RejectCode::ALL
        .iter()
        .map(|c| c.as_str().to_owned())
        .collect();
    assert_eq!(
        documented, kernel,
        "docs/formats.md's rejection codes differ from the kernel's"
    );
}
