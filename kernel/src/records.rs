//! The state's records beside its entities: stacks, prompts and timers,
//! typed, with their canonical forms.

use crate::id::Id;
use crate::value::{object, Value};

/// A stack record; items bottom → top.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Stack {
    /// Entity ids, bottom first.
    pub items: Vec<Id>,
}

/// Where a prompt stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptStatus {
    /// Waiting for its answer.
    Open,
    /// Answered.
    Resolved,
    /// Canceled before it was answered.
    Canceled,
}

impl PromptStatus {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptStatus::Open => "open",
            PromptStatus::Resolved => "resolved",
            PromptStatus::Canceled => "canceled",
        }
    }
}

/// A prompt (created by scripts, answered by players). Its canonical record
/// is `{kind, playerId, title, choices, min, max, step, default, status,
/// response}`, absent options written `null`.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    /// `choice`, `confirm` or `number`.
    pub kind: String,
    /// The player asked.
    pub player_id: Id,
    /// The question.
    pub title: String,
    /// The choices of a `choice` prompt.
    pub choices: Option<Vec<Value>>,
    /// Bounds and grid of a `number` prompt.
    pub min: Option<f64>,
    /// See `min`.
    pub max: Option<f64>,
    /// See `min`.
    pub step: Option<f64>,
    /// The default answer (`Null` when none).
    pub default: Value,
    /// Where it stands.
    pub status: PromptStatus,
    /// The answer, once resolved (`Null` before).
    pub response: Value,
}

/// A scheduled one-shot timer. Only scheduled timers are kept: a timer
/// leaves the state when it fires or is canceled. Its canonical record is
/// `{delay, callback, scriptId, bindingId, entityId, status: "scheduled"}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Timer {
    /// Delay in milliseconds, as registered.
    pub delay: f64,
    /// The callback's name.
    pub callback: String,
    /// The script that armed it.
    pub script_id: String,
    /// The binding that armed it.
    pub binding_id: String,
    /// The entity of that binding, if it is an entity binding.
    pub entity_id: Option<String>,
}

impl Prompt {
    /// Whether the prompt still waits for its answer.
    pub fn is_open(&self) -> bool {
        self.status == PromptStatus::Open
    }

    /// The canonical record.
    pub fn to_value(&self) -> Value {
        let num = |v: Option<f64>| v.map_or(Value::Null, Value::Number);
        object([
            ("kind", Value::from(self.kind.as_str())),
            ("playerId", Value::from(&*self.player_id)),
            ("title", Value::from(self.title.as_str())),
            (
                "choices",
                self.choices.clone().map_or(Value::Null, Value::Array),
            ),
            ("min", num(self.min)),
            ("max", num(self.max)),
            ("step", num(self.step)),
            ("default", self.default.clone()),
            ("status", Value::from(self.status.as_str())),
            ("response", self.response.clone()),
        ])
    }

    /// Reads a canonical record back (`None` when it is not one).
    pub fn from_value(v: &Value) -> Option<Prompt> {
        let Value::Object(o) = v else { return None };
        if o.len() != 10 {
            return None;
        }
        let text = |k: &str| match o.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let num = |k: &str| match o.get(k) {
            Some(Value::Null) => Some(None),
            Some(Value::Number(n)) => Some(Some(*n)),
            _ => None,
        };
        let status = match text("status")?.as_str() {
            "open" => PromptStatus::Open,
            "resolved" => PromptStatus::Resolved,
            "canceled" => PromptStatus::Canceled,
            _ => return None,
        };
        let choices = match o.get("choices")? {
            Value::Null => None,
            Value::Array(a) => Some(a.clone()),
            _ => return None,
        };
        let player_id = text("playerId").filter(|p| !p.is_empty())?;
        Some(Prompt {
            kind: text("kind").filter(|k| !k.is_empty())?,
            player_id: Id::from(player_id.as_str()),
            title: text("title")?,
            choices,
            min: num("min")?,
            max: num("max")?,
            step: num("step")?,
            default: o.get("default")?.clone(),
            status,
            response: o.get("response")?.clone(),
        })
    }
}

impl Timer {
    /// The canonical record.
    pub fn to_value(&self) -> Value {
        object([
            ("delay", Value::Number(self.delay)),
            ("callback", Value::from(self.callback.as_str())),
            ("scriptId", Value::from(self.script_id.as_str())),
            ("bindingId", Value::from(self.binding_id.as_str())),
            ("entityId", Value::from(self.entity_id.as_deref())),
            ("status", Value::from("scheduled")),
        ])
    }

    /// Reads a canonical record back (`None` when it is not one: a missing
    /// or mistyped field, or a status other than `scheduled`).
    pub fn from_value(v: &Value) -> Option<Timer> {
        let Value::Object(o) = v else { return None };
        let text = |k: &str| match o.get(k) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        let delay = match o.get("delay") {
            Some(Value::Number(d)) if *d > 0.0 => *d,
            _ => return None,
        };
        let entity_id = match o.get("entityId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return None,
        };
        if o.get("status") != Some(&Value::from("scheduled")) || o.len() != 6 {
            return None;
        }
        Some(Timer {
            delay,
            callback: text("callback")?,
            script_id: text("scriptId")?,
            binding_id: text("bindingId")?,
            entity_id,
        })
    }
}
