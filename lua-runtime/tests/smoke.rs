mod common;
use common::*;
use serde_json::json;

#[test]
fn a_handler_runs_and_issues_a_subcommand() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          game.entity("score"):add(5)
          storage.presses = (storage.presses or 0) + 1
        end
    "#,
    );
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(component(&k, "score", "counter")["value"], json!(5));
    assert_eq!(storage(&k, "main"), json!({"presses": 1}));
}
