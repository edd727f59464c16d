//! One file per action family. Each action is a flat chain of checks in
//! payload-field order (shapes first, then lookups and rules), then guards,
//! then the mutation through the transaction.

pub(crate) mod button;
pub(crate) mod container;
pub(crate) mod counter;
pub(crate) mod deck;
pub(crate) mod die;
pub(crate) mod entity;
pub(crate) mod lifecycle;
pub(crate) mod matches;
pub(crate) mod prompt;
pub(crate) mod secrecy;
pub(crate) mod snap;
pub(crate) mod stack;
pub(crate) mod system;
pub mod text;
pub(crate) mod timer;

use crate::action::{Action, ActionType};
use crate::host::{GuardKind, GuardRequest, ScriptHost, Verdict};
use crate::observe::shown_name;
use crate::reject::{reject, RejectCode, Rejection};
use crate::state::{Entity, EntityKey, Id, State};
use crate::transform::Transform;
use crate::txn::Failure;
use crate::txn::Txn;

/// `host`, for a registry row marked `(host)` (the marker is the row's own
/// token, so the parameter itself is named here).
macro_rules! pass {
    ($marker:ident, $host:ident) => {
        $host
    };
}

/// Generates [`apply`] from the registry's `apply` column.
macro_rules! dispatch {
    ($(
        $variant:ident => $name:literal, player: $p:ident, script: $s:literal,
        system: $y:literal, apply: $family:ident :: $fn:ident ($($host:ident)?);
    )*) => {
        /// Validates and applies one action inside `txn`: the function the
        /// action's registry row names.
        pub(crate) fn apply(
            txn: &mut Txn<'_>,
            ty: ActionType,
            action: &Action,
            host: &mut dyn ScriptHost,
        ) -> Result<(), Failure> {
            match ty {
                $( ActionType::$variant => $family::$fn(txn, action $(, pass!($host, host))?)?, )*
            }
            Ok(())
        }
    };
}

crate::action::action_registry!(dispatch);

/// Finds the entity named by payload field `field`.
pub(crate) fn find<'a>(
    state: &'a State,
    id: &str,
    field: &str,
) -> Result<(EntityKey, &'a Entity), Rejection> {
    if id.is_empty() {
        // No entity has an empty id: the value is wrong, as a match's
        // schema says of it too (one code inside a match and outside).
        return reject(
            RejectCode::InvalidValue,
            format!("payload.{field} must not be empty"),
        );
    }
    match state.key(id).and_then(|k| state.get(k).map(|e| (k, e))) {
        Some(found) => Ok(found),
        None => reject(
            RejectCode::EntityNotFound,
            format!("payload.{field}: no entity \"{}\"", shown_name(id)),
        ),
    }
}

/// Rejects with `missing_component` unless `present`.
pub(crate) fn need(present: bool, e: &Entity, component: &str) -> Result<(), Rejection> {
    if present {
        Ok(())
    } else {
        reject(
            RejectCode::MissingComponent,
            format!("entity \"{}\" has no {component} component", e.id),
        )
    }
}

/// Rejects with `component_disabled` unless `enabled`.
pub(crate) fn need_enabled(enabled: bool, e: &Entity, component: &str) -> Result<(), Rejection> {
    if enabled {
        Ok(())
    } else {
        reject(
            RejectCode::ComponentDisabled,
            format!("entity \"{}\" has its {component} component disabled", e.id),
        )
    }
}

/// The shared id of a player the source check already found.
pub(crate) fn player_id(txn: &Txn<'_>, player: &str) -> Id {
    txn.state()
        .players
        .get_key_value(player)
        .map_or_else(|| Id::from(player), |(k, _)| k.clone())
}

/// Asks the creator guards; a denial or failure stops the action.
pub(crate) fn run_guard(
    txn: &Txn<'_>,
    host: &mut dyn ScriptHost,
    kind: GuardKind,
    player_id: &str,
    entity: (EntityKey, &str),
    transform: Option<&Transform>,
) -> Result<(), Failure> {
    let request = GuardRequest {
        kind,
        player_id,
        entity_id: entity.1,
        entity_key: entity.0,
        transform,
    };
    match host.guard(txn.state(), &request) {
        Verdict::Allow => Ok(()),
        Verdict::Deny { reason } => Err(Failure::Rejected(Rejection::new(
            RejectCode::GuardDenied,
            reason.unwrap_or_else(|| format!("{} refused", kind.function_name())),
        ))),
        Verdict::Fail(f) => Err(Failure::Script(f)),
    }
}
