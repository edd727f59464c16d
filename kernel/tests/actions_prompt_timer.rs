//! Conformance: prompt.create, prompt.cancel, prompt.respond,
//! timer.register, timer.cancel, system.timer_fire.

mod common;

use common::*;
use serde_json::{json, Value};

fn create(payload: Value) -> Value {
    script("prompt.create", payload)
}

fn respond(p: &str, id: &str, response: Value) -> Value {
    player(
        p,
        "prompt.respond",
        json!({"promptId": id, "response": response}),
    )
}

fn prompt_state(k: &digipology_kernel::Kernel, id: &str) -> Value {
    let doc: Value = serde_json::from_str(&k.state().canonical_json()).expect("state");
    doc["prompts"][id].clone()
}

#[test]
fn a_choice_prompt_is_created_and_answered_once() {
    let mut k = table();
    let ev = accept(
        &mut k,
        create(
            json!({"id": "q1", "kind": "choice", "playerId": "p1", "title": "Pick", "choices": ["a", {"b": 1}, 3], "default": "a"}),
        ),
    );
    assert_eq!(
        ev,
        vec![(
            "prompt.created".into(),
            json!({"promptId": "q1", "playerId": "p1", "kind": "choice", "title": "Pick",
            "choices": ["a", {"b": 1}, 3], "min": null, "max": null, "step": null, "default": "a"})
        )]
    );
    assert_eq!(prompt_state(&k, "q1")["status"], json!("open"));
    // "Choice responses must be canonically equal to a stored choice."
    reject(&mut k, respond("p1", "q1", json!("c")), "invalid_response");
    let ev = accept(&mut k, respond("p1", "q1", json!({"b": 1.0})));
    assert_eq!(
        ev,
        vec![(
            "prompt.responded".into(),
            json!({"promptId": "q1", "playerId": "p1", "response": {"b": 1}})
        )]
    );
    assert_eq!(prompt_state(&k, "q1")["status"], json!("resolved"));
    assert_eq!(prompt_state(&k, "q1")["response"], json!({"b": 1}));
    // "a duplicate response rejects"
    reject(&mut k, respond("p1", "q1", json!("a")), "prompt_closed");
}

#[test]
fn a_response_from_the_wrong_player_rejects() {
    let mut k = table();
    accept(
        &mut k,
        create(json!({"id": "q", "kind": "confirm", "playerId": "p1", "title": "Sure?"})),
    );
    reject(&mut k, respond("p2", "q", json!(true)), "wrong_player");
    // "confirmation responses must be boolean"
    reject(&mut k, respond("p1", "q", json!("yes")), "invalid_response");
    accept(&mut k, respond("p1", "q", json!(false)));
}

#[test]
fn number_responses_must_be_inside_min_max_on_the_step_grid() {
    let mut k = table();
    accept(
        &mut k,
        create(
            json!({"id": "n", "kind": "number", "playerId": "p1", "title": "Bid", "min": 0, "max": 1, "step": 0.1}),
        ),
    );
    reject(&mut k, respond("p1", "n", json!(0.25)), "invalid_response");
    reject(&mut k, respond("p1", "n", json!(1.1)), "invalid_response");
    reject(&mut k, respond("p1", "n", json!(-0.1)), "invalid_response");
    reject(&mut k, respond("p1", "n", json!("0.3")), "invalid_response");
    // 0.3 is on the 0.1 grid although (0.3 - 0) / 0.1 is not exactly 3 in binary.
    accept(&mut k, respond("p1", "n", json!(0.3)));
}

#[test]
fn create_rejections() {
    let mut k = table();
    let ok = json!({"id": "q", "kind": "choice", "playerId": "p1", "title": "T", "choices": ["x"]});
    let with = |key: &str, v: Value| {
        let mut p = ok.clone();
        p[key] = v;
        create(p)
    };
    reject(
        &mut k,
        player("p1", "prompt.create", ok.clone()),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("prompt.create", ok.clone()),
        "source_not_allowed",
    );
    reject(&mut k, with("callback", json!("f")), "unknown_key");
    reject(
        &mut k,
        create(json!({"kind": "choice", "playerId": "p1", "title": "T", "choices": ["x"]})),
        "missing_field",
    );
    // "Requires a new non-empty ID"
    reject(&mut k, with("id", json!("")), "invalid_value");
    // "an existing player"
    reject(&mut k, with("playerId", json!("ghost")), "player_not_found");
    // "kind choice, confirm, or number"
    reject(&mut k, with("kind", json!("poll")), "invalid_value");
    // "Choice prompts require a non-empty canonical choices array"
    reject(&mut k, with("choices", json!([])), "invalid_value");
    reject(&mut k, with("choices", json!("x")), "invalid_type");
    // "and an optional default equal to one choice"
    reject(&mut k, with("default", json!("y")), "invalid_value");
    // "Number prompts require finite min <= max, positive finite step"
    let num = |min: Value, max: Value, step: Value| {
        create(
            json!({"id": "n", "kind": "number", "playerId": "p1", "title": "T", "min": min, "max": max, "step": step}),
        )
    };
    reject(&mut k, num(json!(5), json!(1), json!(1)), "invalid_value");
    reject(&mut k, num(json!(0), json!(1), json!(0)), "invalid_value");
    reject(&mut k, num(json!(0), json!(1), json!(-1)), "invalid_value");
    reject(
        &mut k,
        create(
            json!({"id": "n", "kind": "number", "playerId": "p1", "title": "T", "min": 0, "max": 1}),
        ),
        "invalid_value",
    );
    // "and a valid optional default"
    reject(
        &mut k,
        create(
            json!({"id": "n", "kind": "number", "playerId": "p1", "title": "T", "min": 0, "max": 10, "step": 2, "default": 3}),
        ),
        "invalid_value",
    );
    // "Confirm defaults are boolean."
    reject(
        &mut k,
        create(json!({"id": "c", "kind": "confirm", "playerId": "p1", "title": "T", "default": 1})),
        "invalid_value",
    );
    accept(&mut k, create(ok.clone()));
    reject(&mut k, create(ok), "prompt_exists");
}

#[test]
fn cancel_marks_an_open_prompt_canceled() {
    let mut k = table();
    accept(
        &mut k,
        create(json!({"id": "q", "kind": "confirm", "playerId": "p2", "title": "T"})),
    );
    reject(
        &mut k,
        player("p1", "prompt.cancel", json!({"promptId": "q"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script("prompt.cancel", json!({"promptId": "nope"})),
        "prompt_not_found",
    );
    reject(
        &mut k,
        script("prompt.cancel", json!({"promptId": "q", "why": 1})),
        "unknown_key",
    );
    let ev = accept(&mut k, system("prompt.cancel", json!({"promptId": "q"})));
    assert_eq!(
        ev,
        vec![(
            "prompt.canceled".into(),
            json!({"promptId": "q", "playerId": "p2"})
        )]
    );
    assert_eq!(prompt_state(&k, "q")["status"], json!("canceled"));
    // "Requires an open existing prompt"
    reject(
        &mut k,
        script("prompt.cancel", json!({"promptId": "q"})),
        "prompt_closed",
    );
    reject(&mut k, respond("p2", "q", json!(true)), "prompt_closed");
}

#[test]
fn respond_rejections() {
    let mut k = table();
    reject(
        &mut k,
        script("prompt.respond", json!({"promptId": "q", "response": 1})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        player("p1", "prompt.respond", json!({"promptId": "q"})),
        "missing_field",
    );
    reject(
        &mut k,
        player(
            "p1",
            "prompt.respond",
            json!({"promptId": "q", "response": 1, "x": 1}),
        ),
        "unknown_key",
    );
    reject(&mut k, respond("p1", "q", json!(1)), "prompt_not_found");
}

fn register(id: &str, delay: Value) -> Value {
    script(
        "timer.register",
        json!({"timerId": id, "delay": delay, "callback": "tick", "scriptId": "main", "bindingId": "global"}),
    )
}

#[test]
fn a_timer_is_registered_fired_once_and_never_after_cancel() {
    let mut k = table();
    let ev = accept(&mut k, register("t1", json!(1500)));
    assert_eq!(
        ev,
        vec![(
            "timer.registered".into(),
            json!({"timerId": "t1", "delay": 1500, "callback": "tick", "scriptId": "main", "bindingId": "global", "entityId": null})
        )]
    );
    let ev = accept(
        &mut k,
        system("system.timer_fire", json!({"timerId": "t1"})),
    );
    assert_eq!(
        ev,
        vec![(
            "timer.fired".into(),
            json!({"timerId": "t1", "callback": "tick", "scriptId": "main", "bindingId": "global", "entityId": null})
        )]
    );
    // "a duplicate fire ... rejects": a fired timer has left the state.
    reject(
        &mut k,
        system("system.timer_fire", json!({"timerId": "t1"})),
        "timer_not_found",
    );
    assert!(
        k.state().timers.is_empty(),
        "a fired timer leaves nothing behind"
    );
    // A timer canceled then fired.
    accept(&mut k, register("t2", json!(10)));
    let ev = accept(&mut k, script("timer.cancel", json!({"timerId": "t2"})));
    assert_eq!(
        ev,
        vec![("timer.canceled".into(), json!({"timerId": "t2"}))]
    );
    // "fire after cancellation rejects"; a canceled timer leaves nothing.
    assert!(
        k.state().timers.is_empty(),
        "a canceled timer leaves nothing behind"
    );
    reject(
        &mut k,
        system("system.timer_fire", json!({"timerId": "t2"})),
        "timer_not_found",
    );
    reject(
        &mut k,
        script("timer.cancel", json!({"timerId": "t2"})),
        "timer_not_found",
    );
    // A closed timer's id may be registered again.
    accept(&mut k, register("t2", json!(10)));
}

#[test]
fn timer_rejections() {
    let mut k = table();
    reject(
        &mut k,
        system(
            "timer.register",
            json!({"timerId": "t", "delay": 1, "callback": "c", "scriptId": "s", "bindingId": "b"}),
        ),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script(
            "timer.register",
            json!({"timerId": "t", "delay": 1, "callback": "c", "scriptId": "s", "bindingId": "b", "data": 1}),
        ),
        "unknown_key",
    );
    // "positive finite delay"
    reject(&mut k, register("t", json!(0)), "invalid_value");
    reject(&mut k, register("t", json!(-5)), "invalid_value");
    reject(&mut k, register("t", json!("5")), "invalid_type");
    // "non-empty timer ID ... callback/script/binding IDs"
    reject(&mut k, register("", json!(5)), "invalid_value");
    reject(
        &mut k,
        script(
            "timer.register",
            json!({"timerId": "t", "delay": 1, "callback": "", "scriptId": "s", "bindingId": "b"}),
        ),
        "invalid_value",
    );
    accept(&mut k, register("t", json!(5)));
    reject(&mut k, register("t", json!(5)), "timer_exists");
    reject(
        &mut k,
        player("p1", "timer.cancel", json!({"timerId": "t"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        script("timer.cancel", json!({"timerId": "nope"})),
        "timer_not_found",
    );
    reject(
        &mut k,
        script("system.timer_fire", json!({"timerId": "t"})),
        "source_not_allowed",
    );
    reject(
        &mut k,
        system("system.timer_fire", json!({"timerId": "nope"})),
        "timer_not_found",
    );
}
