//! The transaction runner: guards, handlers, subcommands, atomic rollback,
//! cascades and dry runs (DESIGN §3, §8; registry "Rejection and transaction
//! semantics").

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use digipology_kernel::{
    Action, ClosureHost, GuardKind, Kernel, Limits, ScriptErrorKind, ScriptFailure, Source, Value,
    Verdict,
};
use serde_json::json;

fn failure(message: &str) -> ScriptFailure {
    ScriptFailure {
        script_id: "main".into(),
        binding_id: "global".into(),
        function: "on_counter_changed".into(),
        line: Some(12),
        message: message.into(),
        kind: ScriptErrorKind::Runtime,
    }
}

#[test]
fn a_denying_guard_rejects_with_its_reason() {
    let mut k = table();
    let mut host = ClosureHost::new().with_guard(|_, req| {
        assert_eq!(req.kind, GuardKind::Grab);
        assert_eq!(req.player_id, "p1");
        Verdict::Deny {
            reason: Some("wait for your turn".into()),
        }
    });
    let msg = reject_with(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "card"})),
        "guard_denied",
        &mut host,
    );
    assert_eq!(msg, "wait for your turn");
}

#[test]
fn a_guard_without_reason_names_itself() {
    let mut k = table();
    let mut host = ClosureHost::new().with_guard(|_, _| Verdict::Deny { reason: None });
    let msg = reject_with(
        &mut k,
        player("p1", "button.press", json!({"entityId": "btn"})),
        "guard_denied",
        &mut host,
    );
    assert_eq!(msg, "can_press refused");
    let msg = reject_with(
        &mut k,
        player("p1", "entity.flip", json!({"entityId": "card"})),
        "guard_denied",
        &mut host,
    );
    assert_eq!(msg, "can_flip refused");
}

#[test]
fn guards_run_after_validation_and_only_for_player_sources() {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let seen = calls.clone();
    let mut host = ClosureHost::new().with_guard(move |_, req| {
        seen.borrow_mut().push((req.kind, req.entity_id.to_owned()));
        Verdict::Allow
    });
    let mut k = table();
    // An invalid action never reaches the guard.
    reject_with(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "plain"})),
        "missing_component",
        &mut host,
    );
    // "Player sources also run can_flip; script sources do not."
    accept_with(
        &mut k,
        script("entity.flip", json!({"entityId": "card"})),
        &mut host,
    );
    accept_with(
        &mut k,
        player("p1", "entity.flip", json!({"entityId": "card"})),
        &mut host,
    );
    accept_with(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "card"})),
        &mut host,
    );
    accept_with(
        &mut k,
        player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert_eq!(
        *calls.borrow(),
        vec![
            (GuardKind::Flip, "card".to_owned()),
            (GuardKind::Grab, "card".to_owned()),
            (GuardKind::Press, "btn".to_owned())
        ]
    );
}

#[test]
fn a_failing_guard_is_a_script_error() {
    let mut k = table();
    let mut host = ClosureHost::new()
        .with_guard(|_, _| Verdict::Fail(failure("attempt to index a nil value")));
    let hash = k.state_hash();
    let out = k.process_json(
        &player("p1", "entity.grab", json!({"entityId": "card"})),
        &mut host,
    );
    let ev = events(&out);
    assert_eq!(ev[0].0, "action.rejected");
    assert_eq!(ev[0].1["code"], json!("script_error"));
    assert_eq!(ev[1].0, "script.error");
    assert_eq!(
        ev[1].1,
        json!({"scriptId": "main", "bindingId": "global", "function": "on_counter_changed", "line": 12,
               "message": "attempt to index a nil value", "kind": "runtime", "sequence": out.seq})
    );
    assert_eq!(k.state_hash(), hash);
}

/// A host whose handler answers every counter.changed on `score` by setting
/// the sign's text, and reads its own write.
fn echo_host(read_back: Rc<RefCell<Option<String>>>) -> ClosureHost {
    ClosureHost::new().with_handler(move |ctx, event| {
        if event.type_name() == "counter.changed" {
            ctx.submit(
                "main",
                "global",
                "text.set",
                json!({"entityId": "sign", "value": "scored"}),
            )
            .map_err(|r| failure(&r.to_string()))?;
            let text = ctx
                .state()
                .entity("sign")
                .and_then(|e| e.components.text.clone());
            *read_back.borrow_mut() = text;
        }
        Ok(())
    })
}

#[test]
fn handler_subcommands_apply_at_once_and_share_the_parent_sequence() {
    let read = Rc::new(RefCell::new(None));
    let mut host = echo_host(read.clone());
    let mut k = table();
    let seq = k.state().sequence;
    let out = k.process_json(
        &player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 1}),
        ),
        &mut host,
    );
    assert!(out.accepted());
    let types: Vec<_> = out.events.iter().map(|e| e.type_name()).collect();
    assert_eq!(types, vec!["counter.changed", "text.changed"]);
    assert!(out
        .events
        .iter()
        .all(|e| e.seq == seq && e.action_id.to_string() == format!("a{seq}")));
    // The script read its own write inside the transaction.
    assert_eq!(read.borrow().as_deref(), Some("scored"));
    assert_eq!(component(&k, "sign", "text"), json!({"value": "scored"}));
}

#[test]
fn a_rejected_subcommand_dooms_the_transaction_even_when_swallowed() {
    let mut k = table();
    let mut host = ClosureHost::new().with_handler(|ctx, event| {
        if event.type_name() == "counter.changed" {
            ctx.submit(
                "main",
                "global",
                "text.set",
                json!({"entityId": "sign", "value": "ok"}),
            )
            .map_err(|r| failure(&r.to_string()))?;
            // The script catches this error and carries on (pcall in Lua).
            let swallowed = ctx.submit(
                "rules",
                "b7",
                "counter.add",
                json!({"entityId": "card", "amount": 1}),
            );
            assert!(swallowed.is_err());
            assert!(ctx.is_doomed());
        }
        Ok(())
    });
    let hash = k.state_hash();
    let seq = k.state().sequence;
    let out = k.process_json(
        &player(
            "p1",
            "counter.add",
            json!({"entityId": "score", "amount": 1}),
        ),
        &mut host,
    );
    let ev = events(&out);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[0].0, "action.rejected");
    assert_eq!(ev[0].1["code"], json!("script_error"));
    assert_eq!(ev[1].0, "script.error");
    assert_eq!(ev[1].1["kind"], json!("subcommand"));
    assert_eq!(ev[1].1["scriptId"], json!("rules"));
    assert_eq!(ev[1].1["bindingId"], json!("b7"));
    assert_eq!(ev[1].1["function"], json!("on_counter_changed"));
    assert_eq!(ev[1].1["line"], json!(null));
    assert!(ev[1].1["message"]
        .as_str()
        .unwrap_or("")
        .contains("missing_component"));
    // Everything rolled back: the counter, the text, and the sequence moved on.
    assert_eq!(k.state_hash(), hash);
    assert_eq!(k.state().sequence, seq + 1);
    assert_eq!(component(&k, "score", "counter")["value"], json!(5));
    assert_eq!(component(&k, "sign", "text"), json!({"value": "hi"}));
}

#[test]
fn a_handler_error_rolls_back_rng_storage_and_every_mutation() {
    let mut host = ClosureHost::new().with_handler(|ctx, event| {
        if event.type_name() == "die.rolled" {
            ctx.set_storage("main", Some(Value::from("rolled")));
            ctx.submit("main", "global", "deck.shuffle", json!({"deckId": "deck"}))
                .map_err(|r| failure(&r.to_string()))?;
            return Err(failure("boom"));
        }
        Ok(())
    });
    let mut k = table();
    let mut twin = table();
    let hash = k.state_hash();
    let out = k.process_json(
        &player("p1", "die.roll", json!({"entityId": "d6"})),
        &mut host,
    );
    assert_eq!(
        out.rejection().map(|r| r.code.as_str()),
        Some("script_error")
    );
    assert_eq!(k.state_hash(), hash);
    assert!(k.state().storage().is_empty());
    // The RNG was rewound: the next roll matches a twin that never failed.
    let roll = |k: &mut Kernel| {
        accept(k, player("p1", "die.roll", json!({"entityId": "d6"})))[0].1["value"].clone()
    };
    accept(
        &mut twin,
        player("p2", "button.press", json!({"entityId": "btn"})),
    );
    assert_eq!(roll(&mut k), roll(&mut twin));
}

#[test]
fn storage_writes_commit_with_the_transaction() {
    let mut host = ClosureHost::new().with_handler(|ctx, _| {
        ctx.set_storage("main", Some(Value::Number(3.0)));
        Ok(())
    });
    let mut k = table();
    let before = k.state_hash();
    accept_with(
        &mut k,
        player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert_eq!(k.state().storage().get("main"), Some(&Value::Number(3.0)));
    assert_ne!(k.state_hash(), before, "storage is part of the state hash");
}

#[test]
fn an_endless_cascade_is_stopped_as_a_budget_error() {
    let mut host = ClosureHost::new().with_handler(|ctx, event| {
        if event.type_name() == "counter.changed" {
            let _ = ctx.submit(
                "main",
                "global",
                "counter.add",
                json!({"entityId": "free", "amount": 1}),
            );
        }
        Ok(())
    });
    let mut k = table().with_limits(Limits {
        cascade_depth_max: 8,
        subcommands_max: 100,
        ..Limits::default()
    });
    let hash = k.state_hash();
    let out = k.process_json(
        &player(
            "p1",
            "counter.add",
            json!({"entityId": "free", "amount": 1}),
        ),
        &mut host,
    );
    let ev = events(&out);
    assert_eq!(ev[0].1["code"], json!("script_error"));
    assert_eq!(ev[1].1["kind"], json!("budget"));
    assert!(ev[1].1["message"]
        .as_str()
        .unwrap_or("")
        .contains("cascade_limit"));
    assert_eq!(k.state_hash(), hash);
}

#[test]
fn a_wide_fan_out_hits_the_subcommand_bound() {
    let mut host = ClosureHost::new().with_handler(|ctx, event| {
        if event.type_name() == "button.pressed" {
            for _ in 0..50 {
                let _ = ctx.submit("main", "global", "entity.flip", json!({"entityId": "card"}));
            }
        }
        Ok(())
    });
    let mut k = table().with_limits(Limits {
        cascade_depth_max: 8,
        subcommands_max: 20,
        ..Limits::default()
    });
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert_eq!(
        out.rejection().map(|r| r.code.as_str()),
        Some("script_error")
    );
}

#[test]
fn handlers_see_events_in_emission_order_including_cascades() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    let mut host = ClosureHost::new().with_handler(move |ctx, event| {
        log.borrow_mut().push(event.type_name());
        if event.type_name() == "entity.dropped" {
            ctx.submit(
                "main",
                "global",
                "counter.add",
                json!({"entityId": "free", "amount": 1}),
            )
            .map_err(|r| failure(&r.to_string()))?;
        }
        Ok(())
    });
    let mut k = table();
    accept(
        &mut k,
        player("p1", "entity.grab", json!({"entityId": "card"})),
    );
    let out = k.process_json(
        &system("system.player_left", json!({"playerId": "p1"})),
        &mut host,
    );
    let logged: Vec<_> = out.events.iter().map(|e| e.type_name()).collect();
    assert_eq!(
        logged,
        vec![
            "entity.dropped",
            "seat.left",
            "player.left",
            "counter.changed"
        ]
    );
    assert_eq!(*seen.borrow(), logged);
}

#[test]
fn dry_run_reports_the_verdict_and_events_and_changes_nothing() {
    let mut host = echo_host(Rc::new(RefCell::new(None)));
    let mut k = table();
    let hash = k.state_hash();
    let seq = k.state().sequence;
    let add = Action::new(
        "counter.add",
        Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "score", "amount": 2}),
    );
    let out = k.dry_run(&add, &mut host);
    assert!(out.accepted());
    assert_eq!(out.seq, seq);
    let types: Vec<_> = out.events.iter().map(|e| e.type_name()).collect();
    assert_eq!(types, vec!["counter.changed", "text.changed"]);
    assert_eq!(k.state_hash(), hash);
    assert_eq!(k.state().sequence, seq);
    // An illegal move: the verdict and its code, still no change.
    let bad = Action::new(
        "entity.grab",
        Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "s_bottom"}),
    );
    let out = k.dry_run(&bad, &mut host);
    assert_eq!(
        out.rejection().map(|r| r.code.as_str()),
        Some("not_stack_top")
    );
    assert_eq!(k.state_hash(), hash);
    assert_eq!(k.state().sequence, seq);
    // The real action afterwards produces exactly what the dry run predicted.
    let predicted = k.dry_run(&add, &mut host);
    let real = k.process(&add, &mut host);
    assert_eq!(predicted.events, real.events);
}

/// A bot's try (`Kernel::process_if_accepted`): a refused action leaves
/// nothing behind — no sequence, no events, the same state — and an
/// accepted one is exactly what processing it would have been.
#[test]
fn processing_only_if_accepted_leaves_a_refused_action_no_trace() {
    let mut host = echo_host(Rc::new(RefCell::new(None)));
    let (mut k, mut twin) = (table(), table());
    let hash = k.state_hash();
    let seq = k.state().sequence;
    let bad = Action::new(
        "entity.grab",
        Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "s_bottom"}),
    );
    assert!(k.process_if_accepted(&bad, &mut host).is_none());
    assert_eq!(k.state_hash(), hash);
    assert_eq!(k.state().sequence, seq);
    let add = Action::new(
        "counter.add",
        Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "score", "amount": 2}),
    );
    let tried = k.process_if_accepted(&add, &mut host).expect("accepted");
    let processed = twin.process(&add, &mut host);
    assert_eq!(tried.seq, processed.seq);
    assert_eq!(tried.events, processed.events);
    assert_eq!(k.state_hash(), twin.state_hash());
    assert_eq!(k.state().sequence, seq + 1);
}

#[test]
fn a_dry_run_of_a_die_roll_does_not_consume_randomness() {
    let mut k = table();
    let roll = Action::new(
        "die.roll",
        Source::Player {
            player_id: "p1".into(),
        },
        json!({"entityId": "d6"}),
    );
    let host = &mut digipology_kernel::NoScripts;
    let predicted = k.dry_run(&roll, host);
    let real = k.process(&roll, host);
    assert_eq!(predicted.events, real.events);
}
