//! prompt.create, prompt.cancel, prompt.respond.

use serde_json::Value as Json;

use crate::action::Action;
use crate::event::{EventKind, PromptOptions};
use crate::payload::{json_type, Payload};
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Id, Prompt, PromptStatus};
use crate::txn::Txn;
use crate::value::Value;

/// How far `(response - min) / step` may be from an integer and still count
/// as on the grid (relative), so `0.3` on a `0.1` grid is accepted despite
/// binary floating point.
pub const STEP_TOLERANCE: f64 = 1e-9;

fn canonical(v: &Json, field: &str) -> Result<Value, Rejection> {
    Value::from_json(v)
        .map_err(|e| Rejection::new(RejectCode::NotFinite, format!("payload.{field}: {e}")))
}

fn opt_num(p: &Payload<'_>, key: &str) -> Result<Option<f64>, Rejection> {
    if p.has(key) {
        p.num(key).map(Some)
    } else {
        Ok(None)
    }
}

/// Whether `n` is a valid answer to a number prompt.
pub(crate) fn on_grid(n: f64, min: f64, max: f64, step: f64) -> bool {
    if !n.is_finite() || n < min || n > max {
        return false;
    }
    let k = (n - min) / step;
    (k - k.round()).abs() <= STEP_TOLERANCE * k.abs().max(1.0)
}

/// A new id, an existing player, a valid kind with its options.
pub(crate) fn create(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(
        &action.payload,
        &[
            "id", "kind", "playerId", "title", "choices", "min", "max", "step", "default",
        ],
    )?;
    let id = p.id("id")?;
    let kind = p.str("kind")?;
    let player_id = p.str("playerId")?;
    let title = p.str("title")?;
    let choices = opt_choices(&p)?;
    let (min, max, step) = (
        opt_num(&p, "min")?,
        opt_num(&p, "max")?,
        opt_num(&p, "step")?,
    );
    let default = p
        .opt("default")
        .map(|d| canonical(&d, "default"))
        .transpose()?;
    if txn.state().prompts.contains_key(id) {
        return reject(
            RejectCode::PromptExists,
            format!("prompt \"{id}\" already exists"),
        );
    }
    let Some((pid, _)) = txn.state().players.get_key_value(player_id) else {
        return reject(
            RejectCode::PlayerNotFound,
            format!("player \"{player_id}\" is not in the room"),
        );
    };
    let pid = pid.clone();
    check_kind(kind, choices.as_deref(), min, max, step, default.as_ref())?;
    let num = |v: Option<f64>| v.map_or(Value::Null, Value::Number);
    let choices_value = choices.clone().map_or(Value::Null, Value::Array);
    let default = default.unwrap_or(Value::Null);
    let prompt_id = Id::from(id);
    txn.set_prompt(
        prompt_id.clone(),
        Prompt {
            kind: kind.to_owned(),
            player_id: pid.clone(),
            title: title.to_owned(),
            choices,
            min,
            max,
            step,
            default: default.clone(),
            status: PromptStatus::Open,
            response: Value::Null,
        },
    );
    txn.emit(EventKind::PromptCreated {
        prompt_id,
        player_id: pid,
        options: Box::new(PromptOptions {
            kind: kind.to_owned(),
            title: title.to_owned(),
            choices: choices_value,
            min: num(min),
            max: num(max),
            step: num(step),
            default,
        }),
    });
    Ok(())
}

/// `payload.choices`, when given: an array of canonical values.
fn opt_choices(p: &Payload<'_>) -> Result<Option<Vec<Value>>, Rejection> {
    match p.opt("choices") {
        None => Ok(None),
        Some(Json::Array(items)) => items
            .iter()
            .map(|c| canonical(c, "choices"))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => reject(
            RejectCode::InvalidType,
            format!(
                "payload.choices must be an array, not {}",
                json_type(&other)
            ),
        ),
    }
}

fn check_kind(
    kind: &str,
    choices: Option<&[Value]>,
    min: Option<f64>,
    max: Option<f64>,
    step: Option<f64>,
    default: Option<&Value>,
) -> Result<(), Rejection> {
    let bad = |m: &str| reject(RejectCode::InvalidValue, m.to_owned());
    let has_number_opts = min.is_some() || max.is_some() || step.is_some();
    match kind {
        "choice" => {
            if has_number_opts {
                return bad("min, max and step belong to number prompts");
            }
            let Some(choices) = choices.filter(|c| !c.is_empty()) else {
                return bad("a choice prompt needs a non-empty choices array");
            };
            if default.is_some_and(|d| !choices.contains(d)) {
                return bad("the default must equal one of the choices");
            }
        }
        "confirm" => {
            if choices.is_some() || has_number_opts {
                return bad("a confirm prompt takes no choices, min, max or step");
            }
            if default.is_some_and(|d| !matches!(d, Value::Bool(_))) {
                return bad("a confirm prompt's default must be true or false");
            }
        }
        "number" => {
            if choices.is_some() {
                return bad("choices belong to choice prompts");
            }
            let (Some(min), Some(max), Some(step)) = (min, max, step) else {
                return bad("a number prompt needs min, max and step");
            };
            if min > max {
                return bad("min must not exceed max");
            }
            if step <= 0.0 {
                return bad("step must be positive");
            }
            if let Some(d) = default {
                let ok = matches!(d, Value::Number(n) if on_grid(*n, min, max, step));
                if !ok {
                    return bad("the default must be a number within min..max on the step grid");
                }
            }
        }
        other => {
            return reject(
                RejectCode::InvalidValue,
                format!("payload.kind must be choice, confirm or number, not \"{other}\""),
            )
        }
    }
    Ok(())
}

fn open_prompt<'s>(txn: &'s Txn<'_>, p: &Payload<'_>) -> Result<(Id, &'s Prompt), Rejection> {
    let id = p.str("promptId")?;
    let Some((pid, prompt)) = txn.state().prompts.get_key_value(id) else {
        return reject(RejectCode::PromptNotFound, format!("no prompt \"{id}\""));
    };
    if !prompt.is_open() {
        return reject(
            RejectCode::PromptClosed,
            format!("prompt \"{id}\" is already {}", prompt.status.as_str()),
        );
    }
    Ok((pid.clone(), prompt))
}

/// The choice a seated player answers with as its seat was shown it
/// (docs/observations.md, Text a game writes: a choice naming a card the
/// seat sees under an alias reads with the alias): the first choice that
/// reads as `response` to the seat.
fn choice_as_seen(
    state: &crate::state::State,
    actor: &str,
    choices: &[Value],
    response: &Value,
) -> Option<Value> {
    let seat = state.seat_of(actor)?;
    let viewer = crate::observe::Viewer::Seat(seat.clone());
    choices
        .iter()
        .find(|c| {
            let mut seen = (*c).clone();
            state.scrub_value(&mut seen, &viewer);
            seen == *response
        })
        .cloned()
}

/// An open prompt becomes canceled.
pub(crate) fn cancel(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["promptId"])?;
    let (id, prompt) = open_prompt(txn, &p)?;
    let player = prompt.player_id.clone();
    let mut prompt = prompt.clone();
    prompt.status = PromptStatus::Canceled;
    txn.set_prompt(id.clone(), prompt);
    txn.emit(EventKind::PromptCanceled {
        prompt_id: id,
        player_id: player,
    });
    Ok(())
}

/// The prompt's player answers once, with a response that fits its kind.
pub(crate) fn respond(txn: &mut Txn<'_>, action: &Action) -> Result<(), Rejection> {
    let p = Payload::new(&action.payload, &["promptId", "response"])?;
    let Some(raw) = p.opt("response") else {
        return reject(RejectCode::MissingField, "payload.response is required");
    };
    let mut response = canonical(&raw, "response")?;
    let (id, prompt) = open_prompt(txn, &p)?;
    let actor = action.source.player_id().unwrap_or_default();
    let target = &*prompt.player_id;
    if actor != target {
        return reject(
            RejectCode::WrongPlayer,
            format!("prompt \"{id}\" is for \"{target}\", not \"{actor}\""),
        );
    }
    let fits = match prompt.kind.as_str() {
        "choice" => match prompt.choices.as_deref() {
            Some(c) if c.contains(&response) => true,
            Some(c) => match choice_as_seen(txn.state(), actor, c, &response) {
                Some(real) => {
                    response = real;
                    true
                }
                None => false,
            },
            None => false,
        },
        "confirm" => matches!(response, Value::Bool(_)),
        "number" => match (&response, prompt.min, prompt.max, prompt.step) {
            (Value::Number(n), Some(min), Some(max), Some(step)) => on_grid(*n, min, max, step),
            _ => false,
        },
        _ => false,
    };
    if !fits {
        return reject(
            RejectCode::InvalidResponse,
            format!(
                "{} does not answer prompt \"{id}\"",
                response.to_canonical_json()
            ),
        );
    }
    let player = prompt.player_id.clone();
    let mut prompt = prompt.clone();
    prompt.status = PromptStatus::Resolved;
    prompt.response = response.clone();
    txn.set_prompt(id.clone(), prompt);
    txn.emit(EventKind::PromptResponded {
        prompt_id: id,
        player_id: player,
        response,
    });
    Ok(())
}
