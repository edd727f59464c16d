//! Spawned entity ids are stable: two processes, and a replay of the
//! record, give the same ids and the same hashes.

mod common;

use common::*;

fn game(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("scripts")).expect("dirs");
    write(
        dir,
        "scripts/main.lua",
        br#"
function on_button_pressed(event)
  for i = 1, 3 do
    local t = game.spawn("token", {position = {x = i, y = 0, z = 0}})
    storage.last = t.id
  end
  game.entity(storage.last):destroy()
end
"#,
    );
    write(
        dir,
        "game.json",
        br#"{"seats": ["a"], "entities": [{"id": "btn", "components": {"button": {}}}],
            "prefabs": {"token": {"components": {"grabbable": {}}}},
            "scripts": [{"id": "main", "file": "scripts/main.lua"}]}"#,
    );
    write(
        dir,
        "actions.jsonl",
        b"{\"type\":\"button.press\",\"source\":{\"kind\":\"player\",\"playerId\":\"p1\"},\"payload\":{\"entityId\":\"btn\"}}\n\
          {\"type\":\"button.press\",\"source\":{\"kind\":\"player\",\"playerId\":\"p1\"},\"payload\":{\"entityId\":\"btn\"},\"actionId\":\"x\"}\n",
    );
}

#[test]
fn spawn_ids_are_stable_across_processes_and_replay() {
    let dir = scratch("spawn-ids");
    game(&dir);
    let g = dir.to_str().unwrap_or_default().to_owned();
    let actions = dir.join("actions.jsonl");
    let record = dir.join("record.jsonl");
    let args = |rec: Option<&std::path::Path>| {
        let mut a = vec![
            "run".to_owned(),
            g.clone(),
            "--players".into(),
            "p1".into(),
            "--actions".into(),
            actions.display().to_string(),
        ];
        if let Some(r) = rec {
            a.push("--record".into());
            a.push(r.display().to_string());
        }
        a
    };
    let first = run(
        &args(Some(&record))
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        b"",
    );
    let second = run(
        &args(None).iter().map(String::as_str).collect::<Vec<_>>(),
        b"",
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(first.stdout, second.stdout);
    let spawned: Vec<String> = events(&first)
        .iter()
        .filter(|e| e["type"] == "entity.spawned")
        .map(|e| e["data"]["entityId"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(
        spawned,
        vec![
            "token_a3_1",
            "token_a3_2",
            "token_a3_3",
            "token_x_1",
            "token_x_2",
            "token_x_3"
        ]
    );
    let replay = run(&["replay", record.to_str().unwrap_or_default()], b"");
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stdout)
    );
}
