//! Events as sentences: how `digipology run --format text` prints an event
//! and how the table page's log reads it (docs/table.md).
//!
//! A sentence is made from the event's own JSON line and nothing else, so
//! a viewer's sentence says no more than the viewer's event: give it an
//! event as a seat sees it (docs/observations.md) and a hidden card reads
//! as "a hidden card", an alias as that alias. Ids are written as the
//! event has them; a game's texts (a prompt's title, a text's value) as
//! the game wrote them, quoted.

use serde_json::{Map, Value};

/// The sentence for one event line (`{seq, actionId, type, data}`); an
/// event of a type this module does not know reads as its type and data
/// (`type key=value …`), so nothing is ever dropped.
pub fn sentence(event: &Value) -> String {
    printable(said_of(event))
}

/// A sentence as one printable line: a game's text may hold a line break
/// or a terminal's escape, which would forge a line of the log or reach
/// the terminal; control characters are written escaped (`\n`, `\u{1b}`).
fn printable(s: String) -> String {
    if !s.chars().any(char::is_control) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn said_of(event: &Value) -> String {
    let ty = event.get("type").and_then(Value::as_str).unwrap_or("");
    let empty = Map::new();
    let d = event
        .get("data")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let said = players(ty, d)
        .or_else(|| pieces(ty, d))
        .or_else(|| places(ty, d))
        .or_else(|| decks(ty, d))
        .or_else(|| prompts(ty, d))
        .or_else(|| matches(ty, d));
    match said {
        // A game's message that ends its own sentence keeps its stop.
        Some(mut s) if s.ends_with("..") || s.ends_with("?.") || s.ends_with("!.") => {
            s.pop();
            s
        }
        Some(s) => s,
        None => fallback(ty, d),
    }
}

/// `type key=value …`: what an unknown event reads as.
fn fallback(ty: &str, d: &Map<String, Value>) -> String {
    let mut out = ty.to_owned();
    for (k, v) in d {
        out.push_str(&format!(" {k}={v}"));
    }
    out
}

/// A data field as words: a string as written, `null` as `none`, anything
/// else as its JSON.
fn word(d: &Map<String, Value>, key: &str) -> String {
    value(d.get(key).unwrap_or(&Value::Null))
}

fn value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".to_owned(),
        other => other.to_string(),
    }
}

/// A value a game wrote, quoted when it is text.
fn quoted(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        other => value(other),
    }
}

/// An entity the event names: its id, or "a hidden card" where the viewer
/// may not know which (the projection wrote `null`).
fn thing(d: &Map<String, Value>, key: &str) -> String {
    match d.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "a hidden card".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String]) -> String {
    match items {
        [] => "nothing".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Cards named by a list of ids: the ones the viewer knows by name, then
/// how many hidden ones (`null`s) there are.
fn cards(v: Option<&Value>) -> String {
    let list = v.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut named: Vec<String> = list.iter().filter(|x| !x.is_null()).map(value).collect();
    let hidden = list.iter().filter(|x| x.is_null()).count();
    match hidden {
        0 => {}
        1 => named.push("a hidden card".to_owned()),
        n => named.push(format!("{n} hidden cards")),
    }
    listed(&named)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn players(ty: &str, d: &Map<String, Value>) -> Option<String> {
    let p = || word(d, "playerId");
    Some(match ty {
        "player.joined" => match d.get("name").and_then(Value::as_str) {
            Some(name) => format!("{name} joined as player {}.", p()),
            None => format!("Player {} joined.", p()),
        },
        "player.left" => format!("Player {} left.", p()),
        "player.disconnected" => format!("Player {} lost the connection.", p()),
        "player.removed" => format!("Player {} was removed from the room.", p()),
        "seat.assigned" => format!("{} took seat {}.", p(), word(d, "seatId")),
        "seat.left" => format!("{} left seat {}.", p(), word(d, "seatId")),
        "entity.grabbed" => format!("{} picked up {}.", p(), thing(d, "entityId")),
        "entity.dropped" => format!("{} put down {}.", p(), thing(d, "entityId")),
        "button.pressed" => format!("{} pressed {}.", p(), thing(d, "entityId")),
        _ => return None,
    })
}

fn pieces(ty: &str, d: &Map<String, Value>) -> Option<String> {
    let e = || thing(d, "entityId");
    Some(match ty {
        "game.started" => "The game started.".to_owned(),
        "entity.flipped" => {
            let down = d.get("flipped").and_then(Value::as_bool) == Some(true);
            format!(
                "{} was turned face {}.",
                e(),
                if down { "down" } else { "up" }
            )
        }
        "die.rolled" => format!("{} rolled {}.", e(), word(d, "value")),
        "counter.changed" => {
            let (was, now) = (word(d, "previous"), word(d, "value"));
            if was == now {
                format!("{} stayed at {now}.", e())
            } else {
                format!("{} went from {was} to {now}.", e())
            }
        }
        "text.changed" => format!(
            "{} now reads {}.",
            e(),
            quoted(d.get("value").unwrap_or(&Value::Null))
        ),
        "entity.spawned" => format!("{} was made from {}.", e(), word(d, "prefabId")),
        "entity.destroyed" => format!("{} was taken out of the game.", e()),
        "entity.revealed" => match d.get("seats") {
            Some(Value::String(s)) if s == "all" => format!("{} was shown to everyone.", e()),
            Some(Value::Array(seats)) => {
                let seats: Vec<String> = seats.iter().map(value).collect();
                format!("{} was shown to {}.", e(), listed(&seats))
            }
            _ => format!("{} was shown to {}.", e(), word(d, "seats")),
        },
        _ => return None,
    })
}

fn places(ty: &str, d: &Map<String, Value>) -> Option<String> {
    let e = || thing(d, "entityId");
    let place = |key: &str| match d.get(key) {
        Some(Value::String(s)) => s.clone(),
        _ => "the table".to_owned(),
    };
    let stack = || word(d, "stackId");
    Some(match ty {
        "container.removed" => format!("{} was taken out of {}.", e(), thing(d, "containerId")),
        "container.moved" => format!("{} moved from {} to {}.", e(), place("from"), place("to")),
        "container.reordered" => match d.get("items") {
            Some(Value::Array(_)) => format!(
                "{} was put in a new order: {}.",
                thing(d, "containerId"),
                cards(d.get("items"))
            ),
            // Another seat's hand: that it was rearranged, not how.
            _ => format!("{} was rearranged.", thing(d, "containerId")),
        },
        "stack.created" => format!("{} were stacked as {}.", cards(d.get("items")), stack()),
        "stack.changed" => format!("Stack {} now holds {}.", stack(), cards(d.get("items"))),
        "stack.dissolved" => format!("Stack {} was broken up.", stack()),
        "zone.entered" => format!("{} entered {}.", e(), thing(d, "zoneId")),
        "zone.left" => format!("{} left {}.", e(), thing(d, "zoneId")),
        "snap.attached" => format!("{} snapped to {}.", e(), thing(d, "snapPointId")),
        "snap.detached" => format!("{} came off {}.", e(), thing(d, "snapPointId")),
        "container.visibility_changed" => {
            let owner = match d.get("owner") {
                Some(Value::String(o)) => format!(" to {o}"),
                _ => String::new(),
            };
            format!(
                "{} is now {}{owner}.",
                thing(d, "containerId"),
                word(d, "visibility")
            )
        }
        _ => return None,
    })
}

fn decks(ty: &str, d: &Map<String, Value>) -> Option<String> {
    let deck = || thing(d, "deckId");
    Some(match ty {
        "deck.shuffled" => format!("{} was shuffled.", deck()),
        "deck.drawn" => match d.get("target") {
            Some(Value::String(to)) => {
                format!("{to} drew {} from {}.", cards(d.get("entityIds")), deck())
            }
            _ => format!(
                "{} was drawn from {} onto the table.",
                cards(d.get("entityIds")),
                deck()
            ),
        },
        "deck.dealt" => {
            let each = d.get("cardsEach").and_then(Value::as_u64).unwrap_or(0);
            let targets: Vec<String> = d
                .get("targets")
                .and_then(Value::as_array)
                .map(|t| t.iter().map(value).collect())
                .unwrap_or_default();
            format!(
                "{} dealt {} each to {}: {}.",
                deck(),
                plural(each, "card", "cards"),
                listed(&targets),
                cards(d.get("entityIds"))
            )
        }
        _ => return None,
    })
}

fn prompts(ty: &str, d: &Map<String, Value>) -> Option<String> {
    let p = || word(d, "playerId");
    let null = Value::Null;
    let field = |k: &str| d.get(k).unwrap_or(&null);
    Some(match ty {
        "prompt.created" => {
            let title = quoted(field("title"));
            let default = match field("default") {
                Value::Null => String::new(),
                v => format!(", default {}", quoted(v)),
            };
            let asked = match d.get("kind").and_then(Value::as_str) {
                Some("confirm") => "yes or no".to_owned(),
                Some("number") => format!(
                    "a number from {} to {} in steps of {}",
                    value(field("min")),
                    value(field("max")),
                    value(field("step"))
                ),
                _ => {
                    let choices: Vec<String> = field("choices")
                        .as_array()
                        .map(|c| c.iter().map(quoted).collect())
                        .unwrap_or_default();
                    format!("one of {}", choices.join(", "))
                }
            };
            format!("{} is asked {title}: {asked}{default}.", p())
        }
        "prompt.responded" => format!("{} answered {}.", p(), quoted(field("response"))),
        "prompt.canceled" => format!("The question to {} was withdrawn.", p()),
        "timer.registered" => format!(
            "Timer {} was set for {} ms.",
            word(d, "timerId"),
            word(d, "delay")
        ),
        "timer.canceled" => format!("Timer {} was canceled.", word(d, "timerId")),
        "timer.fired" => format!("Timer {} went off.", word(d, "timerId")),
        _ => return None,
    })
}

fn matches(ty: &str, d: &Map<String, Value>) -> Option<String> {
    Some(match ty {
        "match.over" => {
            let scores: Vec<String> = d
                .get("scores")
                .and_then(Value::as_object)
                .map(|s| s.iter().map(|(k, v)| format!("{k} {}", value(v))).collect())
                .unwrap_or_default();
            if scores.is_empty() {
                "The match is over.".to_owned()
            } else {
                format!("The match is over: {}.", scores.join(", "))
            }
        }
        "match.aborted" => format!("The match was stopped: {}.", word(d, "reason")),
        "match.host_event" => host_event(d),
        "match.sensed" => format!(
            "{} asked {} about {} and was told {}.",
            word(d, "seat"),
            word(d, "name"),
            quoted(d.get("input").unwrap_or(&Value::Null)),
            quoted(d.get("answer").unwrap_or(&Value::Null))
        ),
        "action.rejected" => {
            let what = match d.get("actionType") {
                Some(Value::String(t)) => t.clone(),
                _ => "An action".to_owned(),
            };
            let why = match d.get("message") {
                Some(Value::String(m)) if !m.is_empty() => format!(": {m}"),
                _ => String::new(),
            };
            format!("{what} was refused ({}){why}.", word(d, "code"))
        }
        "script.error" => {
            // The message names the file and line where a seat may read it.
            let why = match (d.get("message"), d.get("line")) {
                (Some(Value::String(m)), _) if !m.is_empty() => format!(": {m}"),
                (_, Some(Value::Number(n))) => format!(" at line {n}"),
                _ => String::new(),
            };
            format!(
                "Script {} failed in {} ({} error){why}.",
                word(d, "scriptId"),
                word(d, "function"),
                word(d, "kind")
            )
        }
        _ => return None,
    })
}

/// The room's own moves in a match: clocks and phases.
fn host_event(d: &Map<String, Value>) -> String {
    let seat = word(d, "seat");
    let phase = word(d, "phase");
    match d.get("kind").and_then(Value::as_str).unwrap_or("") {
        "player_time_exhausted" => format!("{seat} ran out of time."),
        "decision_expired" => format!("{seat}'s time to decide ran out."),
        "invalid_retries_exhausted" => format!("{seat} used up its tries."),
        "phase_deadline" => format!("Phase {phase} reached its deadline."),
        "phase_ready" => format!("Phase {phase} is ready."),
        other => format!("The room raised {other} (seat {seat}, phase {phase})."),
    }
}

#[cfg(test)]
mod tests {
    use super::sentence;
    use serde_json::json;

    fn says(ty: &str, data: serde_json::Value) -> String {
        sentence(&json!({"seq": 1, "actionId": "a1", "type": ty, "data": data}))
    }

    #[test]
    fn events_read_as_sentences() {
        assert_eq!(
            says(
                "deck.dealt",
                json!({"cardsEach": 3, "deckId": "pile", "entityIds": ["c1", null, "c2", null],
                       "targets": ["hand_n", "hand_s"]})
            ),
            "pile dealt 3 cards each to hand_n and hand_s: c1, c2 and 2 hidden cards."
        );
        assert_eq!(
            says(
                "container.moved",
                json!({"entityId": null, "from": "hand_s", "fromIndex": 0, "index": 5, "to": null})
            ),
            "a hidden card moved from hand_s to the table."
        );
        assert_eq!(
            says(
                "counter.changed",
                json!({"entityId": "score", "previous": 0, "value": 3})
            ),
            "score went from 0 to 3."
        );
        assert_eq!(
            says(
                "prompt.created",
                json!({"choices": ["play:c1", "draw"], "default": "draw", "kind": "choice",
                 "max": null, "min": null, "playerId": "ann", "promptId": "ask_1", "step": null, "title": "Your move"})
            ),
            "ann is asked \"Your move\": one of \"play:c1\", \"draw\", default \"draw\"."
        );
        assert_eq!(
            says(
                "action.rejected",
                json!({"actionType": "button.press", "code": "guard_denied", "message": "shut"})
            ),
            "button.press was refused (guard_denied): shut."
        );
        assert_eq!(
            says(
                "script.error",
                json!({"scriptId": "main", "bindingId": "global", "function": "f",
                 "line": 7, "message": "scripts/main.lua:7: kaboom", "kind": "runtime", "sequence": 3})
            ),
            "Script main failed in f (runtime error): scripts/main.lua:7: kaboom."
        );
    }

    /// Every event the kernel emits has its own sentence (a new event type
    /// without one fails here).
    #[test]
    fn every_event_type_has_a_sentence() {
        for row in digipology_kernel::event::EVENT_TABLE {
            let data: serde_json::Map<String, serde_json::Value> = row
                .data_keys()
                .into_iter()
                .map(|k| (k.to_owned(), serde_json::Value::Null))
                .collect();
            let said = says(row.type_name, serde_json::Value::Object(data));
            assert!(
                !said.starts_with(row.type_name) && said.ends_with('.'),
                "{}: {said}",
                row.type_name
            );
        }
    }

    /// A game's text cannot forge a line of the log or reach the terminal.
    #[test]
    fn control_characters_in_a_games_text_are_escaped() {
        let said = sentence(&json!({"seq": 1, "type": "text.changed",
            "data": {"entityId": "sign", "value": "hi\n#99 match.over\u{1b}[2J"}}));
        assert!(!said.contains('\n') && !said.contains('\u{1b}'), "{said}");
        assert!(said.contains("\\n#99"), "{said}");
    }

    #[test]
    fn an_unknown_event_keeps_its_data() {
        assert_eq!(says("new.kind", json!({"a": 1})), "new.kind a=1");
        assert_eq!(
            says("match.aborted", json!({"reason": "everyone left."})),
            "The match was stopped: everyone left."
        );
        assert_eq!(sentence(&json!("not an event")), "");
    }
}
