//! Two processes running a script that iterates `pairs` (and raw `next`)
//! over 100 string keys and issues subcommands in that order produce
//! byte-identical events (DESIGN §8 determinism).

mod common;

use common::*;

const SCRIPT: &str = r#"
local function keys()
  local t = {}
  for i = 1, 100 do t["key_" .. ((i * 37) % 101)] = i end
  return t
end

function on_start(event)
  local order = {}
  for k, v in pairs(keys()) do
    order[#order + 1] = k
    game.entity("score"):add(v)
  end
  local raw = {}
  for k in next, keys() do raw[#raw + 1] = k end
  for i = 1, 5 do game.entity("score"):add(#raw[i]) end
  game.entity("banner"):set_text(table.concat(order, ","):sub(1, 4000))
  storage.raw_first = raw[1]
  storage.roll = math.random(1000)
end
"#;

fn write_game(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("scripts")).expect("dirs");
    write(dir, "scripts/main.lua", SCRIPT.as_bytes());
    write(
        dir,
        "game.json",
        br#"{"seats": ["a"], "entities": [
            {"id": "score", "components": {"counter": {}}},
            {"id": "banner", "components": {"text": {}}}],
            "scripts": [{"id": "main", "file": "scripts/main.lua", "bindings": [{"id": "global"}]}]}"#,
    );
}

#[test]
fn two_processes_iterating_string_keys_emit_identical_bytes() {
    let dir = scratch("lua-det");
    write_game(&dir);
    let game = dir.to_str().unwrap_or_default();
    let a = run(&["run", game, "--seed", "11"], b"");
    let b = run(&["run", game, "--seed", "11"], b"");
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_no_panic(&a);
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout, "the two processes disagree");
    let ev = events(&a);
    let changes = ev.iter().filter(|e| e["type"] == "counter.changed").count();
    assert_eq!(changes, 105);
    // The documented pairs order: sorted keys.
    let text = ev
        .iter()
        .find(|e| e["type"] == "text.changed")
        .map(|e| e["data"]["value"].clone());
    let first = text
        .as_ref()
        .and_then(|t| t.as_str())
        .map(|t| t.split(',').next().unwrap_or("").to_owned());
    assert_eq!(first.as_deref(), Some("key_1"));
}

#[test]
fn a_script_error_while_loading_names_the_file_and_line() {
    let dir = scratch("lua-syntax");
    write_game(&dir);
    write(
        &dir,
        "scripts/main.lua",
        b"function on_start(event)\n  local x = = 1\nend\n",
    );
    let out = run(&["run", dir.to_str().unwrap_or_default()], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scripts/main.lua:2:") && err.contains("syntax error"),
        "{err}"
    );
    assert_no_panic(&out);
}
