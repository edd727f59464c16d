//! button.press.

use crate::action::Action;
use crate::actions::{find, need, need_enabled, player_id, run_guard};
use crate::event::EventKind;
use crate::host::{GuardKind, ScriptHost};
use crate::payload::Payload;
use crate::txn::Failure;
use crate::txn::Txn;

/// Enabled button and every `can_press` approving; the button itself does
/// not change.
pub(crate) fn press(
    txn: &mut Txn<'_>,
    action: &Action,
    host: &mut dyn ScriptHost,
) -> Result<(), Failure> {
    let p = Payload::new(&action.payload, &["entityId"])?;
    let entity_id = p.str("entityId")?;
    let player = action.source.player_id().unwrap_or_default();
    let (key, e) = find(txn.state(), entity_id, "entityId")?;
    need(e.components.button.is_some(), e, "button")?;
    need_enabled(e.components.button.is_some_and(|b| b.enabled), e, "button")?;
    let eid = e.id.clone();
    run_guard(txn, host, GuardKind::Press, player, (key, entity_id), None)?;
    let pid = player_id(txn, player);
    txn.emit(EventKind::ButtonPressed {
        entity_id: eid,
        player_id: pid,
    });
    Ok(())
}
