//! The ordered-action envelope (DESIGN §3): anything unusable is consumed as
//! `malformed_action`, never a crash, never a state change.

mod common;

use common::*;
use digipology_kernel::{Kernel, NoScripts};
use serde_json::json;

fn line_rejected(k: &mut Kernel, line: &str, code: &str) -> String {
    let hash = k.state_hash();
    let seq = k.state().sequence;
    let out = k.process_line(line, &mut NoScripts);
    let ev = events(&out);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0].0, "action.rejected");
    assert_eq!(ev[0].1["code"], json!(code), "{line:.200}: {ev:?}");
    assert_eq!(k.state_hash(), hash);
    assert_eq!(k.state().sequence, seq + 1);
    ev[0].1["message"].as_str().unwrap_or("").to_owned()
}

#[test]
fn malformed_lines_are_consumed_and_rejected() {
    let mut k = table();
    for line in [
        "not json",
        "{",
        "[]",
        "42",
        "null",
        r#"{"source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"counter.add","payload":{}}"#,
        r#"{"type":"counter.add","source":{"kind":"system"}}"#,
        r#"{"type":7,"source":{"kind":"system"},"payload":{}}"#,
        r#"{"type":"counter.add","source":{"kind":"robot"},"payload":{}}"#,
        r#"{"type":"counter.add","source":{"kind":"player"},"payload":{}}"#,
        r#"{"type":"counter.add","source":{"kind":"player","playerId":"p1","extra":1},"payload":{}}"#,
        r#"{"type":"counter.add","source":{"kind":"script","scriptId":"s"},"payload":{}}"#,
        r#"{"type":"counter.add","source":{"kind":"system"},"payload":[]}"#,
        r#"{"type":"counter.add","source":{"kind":"system"},"payload":{},"extra":true}"#,
        r#"{"type":"counter.add","source":{"kind":"system"},"payload":{},"actionId":5}"#,
        r#"{"type":"counter.add","source":{"kind":"system"},"payload":{},"at":-1}"#,
        r#"{"type":"counter.add","source":{"kind":"system"},"payload":{},"at":1.5}"#,
    ] {
        line_rejected(&mut k, line, "malformed_action");
    }
}

#[test]
fn the_rejection_names_the_action_type_and_id_when_readable() {
    let mut k = table();
    let out = k.process_line(
        r#"{"type":"counter.add","actionId":"mine","payload":{}}"#,
        &mut NoScripts,
    );
    let ev = events(&out);
    assert_eq!(ev[0].1["actionType"], json!("counter.add"));
    assert_eq!(out.action_id.to_string(), "mine");
    let out = k.process_line("garbage", &mut NoScripts);
    assert_eq!(events(&out)[0].1["actionType"], json!(null));
    assert_eq!(out.action_id.to_string(), format!("a{}", out.seq));
}

#[test]
fn unknown_types_are_rejected_before_anything_else() {
    let mut k = table();
    // Even with a wrong source and unknown keys, the type is checked first.
    let msg = line_rejected(
        &mut k,
        r#"{"type":"entity.teleport","source":{"kind":"system"},"payload":{"x":1}}"#,
        "unknown_action_type",
    );
    assert!(msg.contains("entity.teleport"));
    // Names outside the registry are unknown, whatever they look like.
    line_rejected(
        &mut k,
        r#"{"type":"deck.cut","source":{"kind":"system"},"payload":{}}"#,
        "unknown_action_type",
    );
}

#[test]
fn a_ten_megabyte_string_is_an_ordinary_rejection() {
    let mut k = table();
    let big = "x".repeat(10 * 1024 * 1024);
    let line =
        json!({"type": "text.set", "source": {"kind": "script", "scriptId": "s", "bindingId": "b"},
                      "payload": {"entityId": "sign", "value": big}})
        .to_string();
    line_rejected(&mut k, &line, "text_too_long");
    let line = json!({"type": "counter.add", "source": {"kind": "player", "playerId": "p1"},
                      "payload": {"entityId": big, "amount": 1}})
    .to_string();
    line_rejected(&mut k, &line, "entity_not_found");
}

#[test]
fn deeply_nested_payloads_are_rejected_without_overflowing_the_stack() {
    let mut k = table();
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let line = format!(
        r#"{{"type":"counter.add","source":{{"kind":"player","playerId":"p1"}},"payload":{{"entityId":"score","amount":{nested}}}}}"#
    );
    line_rejected(&mut k, &line, "malformed_action");
    // Shallow enough to parse, but still not a number.
    let nested = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let line = format!(
        r#"{{"type":"counter.add","source":{{"kind":"player","playerId":"p1"}},"payload":{{"entityId":"score","amount":{nested}}}}}"#
    );
    line_rejected(&mut k, &line, "invalid_type");
}

#[test]
fn an_action_id_given_by_the_caller_is_kept_on_every_event() {
    let mut k = table();
    let out = k.process_line(
        r#"{"type":"counter.add","actionId":"click-17","source":{"kind":"player","playerId":"p1"},"payload":{"entityId":"score","amount":1}}"#,
        &mut NoScripts,
    );
    assert!(out.accepted());
    assert!(out
        .events
        .iter()
        .all(|e| &*e.action_id.to_string() == "click-17"));
}

/// The fast way in (`Action::from_json_str`, no JSON tree) answers only for
/// well-formed envelopes, and then exactly as the general path does; for
/// everything else it steps aside so the general path names the problem.
#[test]
fn the_fast_envelope_reader_agrees_with_the_general_one() {
    let p1 = r#"{"kind":"player","playerId":"p1"}"#;
    let well_formed = [
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{"entityId":"score","amount":2}}}}"#),
        format!(r#"{{"payload":{{"amount":-0.5,"entityId":"score"}},"source":{p1},"type":"counter.add","at":12,"actionId":"x1"}}"#),
        r#"{"type":"entity.move","source":{"kind":"script","scriptId":"main","bindingId":"global"},"payload":{"entityId":"card","transform":{"position":{"x":1,"y":2,"z":3}}}}"#.to_owned(),
        r#"{"type":"system.game_start","source":{"kind":"system"},"payload":{"settings":{"a":[1,2,{"b":null}]}}}"#.to_owned(),
        format!(r#"{{"type":"no.such","source":{p1},"payload":{{"n":18446744073709551616,"s":"\u00e9\ud83d\ude00 long string well past twenty-three bytes","t":true,"z":null}}}}"#),
    ];
    for line in &well_formed {
        let fast = digipology_kernel::Action::from_json_str(line)
            .unwrap_or_else(|| panic!("the fast reader refused a well-formed line: {line}"));
        let general = digipology_kernel::Action::from_json(
            &serde_json::from_str(line).unwrap_or(serde_json::Value::Null),
        );
        match general {
            Ok(a) => assert_eq!(fast, a, "{line}"),
            Err(e) => panic!("the general path refused {line}: {e}"),
        }
        // The record writes a typed action back as JSON; both ways in read
        // that text as the same action.
        let mut written = String::new();
        fast.write_json(&mut written);
        assert_eq!(
            digipology_kernel::Action::from_json_str(&written).as_ref(),
            Some(&fast),
            "{line} written as {written}"
        );
        let reread: serde_json::Value = serde_json::from_str(&written).expect("valid JSON");
        assert_eq!(
            digipology_kernel::Action::from_json(&reread).ok().as_ref(),
            Some(&fast),
            "{written}"
        );
    }
    let malformed = [
        format!(r#"{{"type":"counter.add","source":{p1}}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":null}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{}},"extra":1}}"#),
        format!(r#"{{"type":5,"source":{p1},"payload":{{}}}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{}},"at":null}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{}},"at":-1}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{}},"at":1.5}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{}},"actionId":""}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{}},"actionId":null}}"#),
        r#"{"type":"counter.add","source":{"kind":"player"},"payload":{}}"#.to_owned(),
        r#"{"type":"counter.add","source":{"kind":"player","playerId":"p1","scriptId":"x"},"payload":{}}"#.to_owned(),
        r#"{"type":"counter.add","source":{"kind":"robot"},"payload":{}}"#.to_owned(),
        format!(r#"{{"type":"counter.add","type":"counter.set","source":{p1},"payload":{{}}}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{"a":1,"a":2}}}}"#),
        format!(r#"{{"type":"counter.add","source":{p1},"payload":{{"entityId":"score","amount":1e400}}}}"#),
        "[]".to_owned(),
        r#"["counter.add",{"kind":"player","playerId":"p1"},{"entityId":"score","amount":5}]"#.to_owned(),
        r#"{"type":"counter.add","source":["system"],"payload":{"entityId":"score","amount":5}}"#.to_owned(),
        r#"{"type":"counter.add","source":["player","p1"],"payload":{"entityId":"score","amount":5}}"#.to_owned(),
        r#"{"type":"counter.add","source":{"kind":"system"},"payload":["score",5]}"#.to_owned(),
        "not json".to_owned(),
    ];
    for line in &malformed {
        let fast = digipology_kernel::Action::from_json_str(line);
        let general = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .map(|v| digipology_kernel::Action::from_json(&v));
        match (fast, general) {
            (None, _) => {}
            // A line both accept must be read alike (duplicate keys: the
            // general path keeps the last; the fast one steps aside).
            (Some(f), Some(Ok(g))) => assert_eq!(f, g, "{line}"),
            (Some(_), other) => {
                panic!("the fast reader accepted {line}, the general path: {other:?}")
            }
        }
    }
}
