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

const ODD: &str = r#"
function on_start(event)
  local t = {b = 1, [2.5] = 2, a = 3, [-1] = 4, [true] = 5, [false] = 6}
  local order, k = {}, nil
  repeat k = next(t, k) if k ~= nil then order[#order + 1] = tostring(k) end until k == nil
  storage.next_order = table.concat(order, " ")
  local bad = {}
  bad[{}] = 1
  bad[function() end] = 2
  storage.next_error = select(2, pcall(next, bad))
  storage.pairs_error = select(2, pcall(function() for _ in pairs(bad) do end end))
  storage.tostrings = {
    tostring({}), tostring(print), tostring(coroutine.create(function() end)),
    tostring(setmetatable({}, {__tostring = function() return "obj" end})),
    tostring(game.entity("score")), tostring(storage), tostring(string),
  }
  storage.meta_error = select(2, pcall(setmetatable, {}, {__name = "x"}))
  storage.error_table = tostring(select(2, pcall(error, {})))
end

function on_button_pressed(event)
  error(setmetatable({}, {__tostring = function() return "custom failure" end}))
end
"#;

/// Two processes running unusual keys and metatables — `next` over mixed
/// and unorderable keys, `tostring` of every kind of value, error objects
/// — write byte-identical events and state (no address, no hash order).
#[test]
fn next_tostring_and_error_objects_are_identical_across_processes() {
    let dir = scratch("lua-det-odd");
    write_game(&dir);
    write(&dir, "scripts/main.lua", ODD.as_bytes());
    write(
        &dir,
        "game.json",
        br#"{"seats": ["a"], "entities": [
            {"id": "score", "components": {"counter": {}}},
            {"id": "b", "components": {"button": {}}}],
            "scripts": [{"id": "main", "file": "scripts/main.lua"}]}"#,
    );
    let game = dir.to_str().unwrap_or_default();
    let press =
        br#"{"type":"system.player_joined","source":{"kind":"system"},"payload":{"playerId":"p1"}}
{"type":"button.press","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"b"}}
"#;
    let actions = write(&dir, "a.jsonl", press);
    let state_a = dir.join("a.json");
    let state_b = dir.join("b.json");
    let args = |out: &std::path::Path| {
        vec![
            "run".to_owned(),
            game.to_owned(),
            "--actions".into(),
            actions.to_string_lossy().into_owned(),
            "--format".into(),
            "jsonl".into(),
            "--state-out".into(),
            out.to_string_lossy().into_owned(),
        ]
    };
    let a_args = args(&state_a);
    let b_args = args(&state_b);
    let a = run(&a_args.iter().map(String::as_str).collect::<Vec<_>>(), b"");
    let b = run(&b_args.iter().map(String::as_str).collect::<Vec<_>>(), b"");
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "the two processes disagree");
    let sa = std::fs::read(&state_a).expect("state");
    assert_eq!(sa, std::fs::read(&state_b).expect("state"));
    let text = String::from_utf8_lossy(&a.stdout).into_owned() + &String::from_utf8_lossy(&sa);
    assert!(
        !text.contains("0x"),
        "an address reached the output:\n{text}"
    );
    let state: serde_json::Value = serde_json::from_slice(&sa).expect("json");
    let st = &state["storage"]["main"];
    assert_eq!(st["next_order"], "-1 2.5 a b false true");
    assert!(
        st["next_error"]
            .as_str()
            .unwrap_or("")
            .contains("next: keys must be"),
        "{st}"
    );
    assert!(
        st["pairs_error"]
            .as_str()
            .unwrap_or("")
            .contains("pairs: keys must be"),
        "{st}"
    );
    assert_eq!(
        st["tostrings"],
        serde_json::json!([
            "table",
            "function",
            "thread",
            "obj",
            "entity score",
            "storage",
            "table"
        ])
    );
    assert!(
        st["meta_error"].as_str().unwrap_or("").contains("__name"),
        "{st}"
    );
    assert_eq!(st["error_table"], "table");
    let failure = events(&a)
        .into_iter()
        .find(|e| e["type"] == "script.error")
        .expect("the press fails");
    assert!(
        failure["data"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("custom failure"),
        "{failure}"
    );
}
