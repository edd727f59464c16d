//! ui and timer from Lua: prompts and timers with callbacks stored by name,
//! deterministic ids, data, cancellation, and vanished callbacks.

mod common;

use common::*;
use serde_json::json;

fn fire(id: &str) -> serde_json::Value {
    json!({"type": "system.timer_fire", "source": {"kind": "system"}, "payload": {"timerId": id}})
}

#[test]
fn a_prompt_answer_reaches_its_stored_callback() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          storage.id = ui:prompt(game.player(event.data.playerId), "Color?", {"red", "blue"}, {callback = "answered", default = "red"})
          storage.c = ui:confirm("p2", "Sure?", {callback = "confirmed"})
          storage.n = ui:number_prompt("p1", "Bid", {min = 0, max = 10, step = 2, callback = "bid"})
        end
        function answered(answer, event) storage.answer = answer storage.who = event.data.playerId end
        function confirmed(answer) storage.sure = answer end
        function bid(n) storage.bid = n end
    "#,
    );
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    assert!(out.accepted(), "{:?}", events(&out));
    let seq = out.seq;
    let st = storage(&k, "main");
    // Deterministic ids: kind, the action's sequence, a counter.
    assert_eq!(st["id"], json!(format!("prompt_{seq}_1")));
    assert_eq!(st["c"], json!(format!("prompt_{seq}_2")));
    let id = st["id"].as_str().unwrap_or("").to_owned();
    let c = st["c"].as_str().unwrap_or("").to_owned();
    let n = st["n"].as_str().unwrap_or("").to_owned();
    for (who, pid, response) in [
        ("p1", &id, json!("blue")),
        ("p2", &c, json!(true)),
        ("p1", &n, json!(6)),
    ] {
        let out = k.process_json(
            &player(
                who,
                "prompt.respond",
                json!({"promptId": pid, "response": response}),
            ),
            &mut host,
        );
        assert!(out.accepted(), "{:?}", events(&out));
    }
    let st = storage(&k, "main");
    assert_eq!(
        (
            st["answer"].clone(),
            st["who"].clone(),
            st["sure"].clone(),
            st["bid"].clone()
        ),
        (json!("blue"), json!("p1"), json!(true), json!(6))
    );
    // The stored callback records are cleaned up once used.
    let doc: serde_json::Value = serde_json::from_str(&k.state().canonical_json()).expect("state");
    assert_eq!(doc["storage"].get("@runtime"), None, "{}", doc["storage"]);
}

#[test]
fn a_timer_fire_reaches_its_callback_with_data_and_cancel_stops_it() {
    let (mut k, mut host) = global(
        r#"
        function on_button_pressed(event)
          storage.t = timer.after(500, "ring", {times = 2})
          storage.u = timer.after(500, "ring")
          timer.cancel(storage.u)
        end
        function ring(data, event)
          storage.rang = data and data.times or "no data"
          storage.timer = event.data.timerId
        end
    "#,
    );
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    let st = storage(&k, "main");
    let t = st["t"].as_str().unwrap_or("").to_owned();
    let u = st["u"].as_str().unwrap_or("").to_owned();
    let out = k.process_json(&fire(&t), &mut host);
    assert!(out.accepted(), "{:?}", events(&out));
    assert_eq!(storage(&k, "main")["rang"], json!(2));
    assert_eq!(storage(&k, "main")["timer"], json!(t));
    let out = k.process_json(&fire(&u), &mut host);
    assert_eq!(
        out.rejection().map(|r| r.code.as_str()),
        Some("timer_not_found")
    );
}

#[test]
fn an_entity_bindings_timer_names_its_entity() {
    let (mut k, mut host) = room(&[(
        "dice",
        "function on_button_pressed(e) timer.after(10, 'ring') end\nfunction ring(data, e) self:roll() end",
        &[("d", Some("btn"))],
    )]);
    start(&mut k, &mut host);
    let out = k.process_json(
        &player("p1", "button.press", json!({"entityId": "btn"})),
        &mut host,
    );
    let registered = events(&out)
        .into_iter()
        .find(|(t, _)| t == "timer.registered")
        .map(|(_, d)| d);
    assert_eq!(
        registered.map(|d| d["entityId"].clone()),
        Some(json!("btn"))
    );
}

#[test]
fn a_callback_that_no_longer_exists_is_a_script_error() {
    let (mut k, mut host) =
        global("function on_button_pressed(e) storage.t = timer.after(5, 'missing') end");
    start(&mut k, &mut host);
    assert!(k
        .process_json(
            &player("p1", "button.press", json!({"entityId": "btn"})),
            &mut host
        )
        .accepted());
    let t = storage(&k, "main")["t"].as_str().unwrap_or("").to_owned();
    let err = script_error(&mut k, &mut host, fire(&t), "runtime");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("'missing' no longer exists"),
        "{err}"
    );
    still_serving(&mut k, &mut host);
}

#[test]
fn a_rolled_back_action_takes_its_prompts_and_timers_with_it() {
    let (k, _, _) = press_fails(
        r#"
        function on_button_pressed(event)
          ui:prompt("p1", "Q", {"a"}, {callback = "cb"})
          timer.after(10, "cb")
          error("changed my mind")
        end
        function cb() end
    "#,
        "runtime",
    );
    let doc: serde_json::Value = serde_json::from_str(&k.state().canonical_json()).expect("state");
    assert_eq!(doc["prompts"], json!({}));
    assert_eq!(doc["timers"], json!({}));
    assert_eq!(doc["storage"], json!({}));
}

#[test]
fn ui_and_timer_are_unavailable_in_guards() {
    let (_, _, _) = press_fails(
        "function can_press(p, e) timer.after(5, 'x') return true end",
        "guard_mutation",
    );
}
