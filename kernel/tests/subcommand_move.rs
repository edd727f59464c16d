//! `ScriptCtx::move_item` is `container.move` (registry v1 row
//! "container.move", script source) without a payload: for every outcome —
//! accepted or each rejection rule — it must emit exactly what submitting
//! the payload `{entity, from, to, index}` emits, and leave the same state.

mod common;

use common::{events, player, table};
use digipology_kernel::{ClosureHost, Fields, Id, ScriptErrorKind, ScriptFailure};
use serde_json::json;

type Move = (
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    u64,
);

fn host(moves: Vec<Move>, typed: bool) -> ClosureHost {
    let (script, binding) = (Id::from("main"), Id::from("global"));
    ClosureHost::new().with_handler(move |ctx, event| {
        if event.type_name() != "button.pressed" {
            return Ok(());
        }
        for &(entity, from, to, index) in &moves {
            let done = if typed {
                ctx.move_item(&script, &binding, entity, from, to, index)
            } else {
                let payload = Fields::new()
                    .with("entity", entity)
                    .with("from", from)
                    .with("to", to)
                    .with("index", payload_number(index));
                ctx.submit_fields(
                    &script,
                    &binding,
                    digipology_kernel::ActionType::ContainerMove,
                    payload,
                )
            };
            if let Err(r) = done {
                return Err(ScriptFailure {
                    script_id: "main".into(),
                    binding_id: "global".into(),
                    function: "on_button_pressed".into(),
                    line: None,
                    message: r.to_string(),
                    kind: ScriptErrorKind::Subcommand,
                });
            }
        }
        Ok(())
    })
}

fn run(moves: &[Move], typed: bool) -> (Vec<(String, serde_json::Value)>, String, bool) {
    let mut k = table();
    let mut h = host(moves.to_vec(), typed);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut h,
    );
    (events(&out), k.state_hash(), out.accepted())
}

#[test]
fn move_item_matches_the_container_move_payload_for_every_rule() {
    let cases: &[(&str, Vec<Move>, bool)] = &[
        (
            "deck to hand, in order, then back to the world",
            vec![
                ("c3", Some("deck"), Some("hand"), 0),
                ("c2", Some("deck"), Some("hand"), 1),
                ("c1", Some("deck"), None, 0),
            ],
            true,
        ),
        (
            "same container",
            vec![("c3", Some("deck"), Some("deck"), 0)],
            false,
        ),
        (
            "world needs index 0",
            vec![("c3", Some("deck"), None, 1)],
            false,
        ),
        (
            "no such entity",
            vec![("nope", Some("deck"), Some("hand"), 0)],
            false,
        ),
        (
            "not in from",
            vec![("c3", Some("hand"), Some("bag"), 0)],
            false,
        ),
        (
            "index beyond the end",
            vec![("c3", Some("deck"), Some("hand"), 1)],
            false,
        ),
        (
            "capacity",
            vec![
                ("c3", Some("deck"), Some("bag"), 0),
                ("c2", Some("deck"), Some("bag"), 1),
                ("c1", Some("deck"), Some("bag"), 2),
            ],
            false,
        ),
        (
            "target is not a container",
            vec![("c3", Some("deck"), Some("score"), 0)],
            false,
        ),
        (
            "unsafe index",
            vec![("c3", Some("deck"), Some("hand"), 1 << 53)],
            false,
        ),
    ];
    for (name, moves, accepted) in cases {
        let by_payload = run(moves, false);
        let typed = run(moves, true);
        assert_eq!(by_payload.2, *accepted, "{name}: {:?}", by_payload.0);
        assert_eq!(typed, by_payload, "{name}");
    }
}

/// The index as a payload writes it: a JSON number (a double), so an index
/// beyond 2^53 is rounded exactly as a payload carrying it would be — the
/// comparison with the typed path includes those.
#[allow(clippy::cast_precision_loss)]
fn payload_number(index: u64) -> f64 {
    index as f64
}
