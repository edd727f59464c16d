//! The HTTP+JSON API (docs/server.md, Routes): who may call what, what a
//! body must hold, long polls and event streams. Every refusal is a 4xx
//! (or 503) with a JSON body `{code, message}`.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use digipology_kernel::Viewer;
use futures_util::Stream;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use crate::feed::{Feed, Tick, SPECTATOR};
use crate::hub::{Create, Handle, Hub, JoinRequest, Refusal};
use crate::limits::RateLimiter;
use crate::live::{Answer, Cmd};

/// A refusal as the API answers it.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: String,
    message: String,
}

impl ApiError {
    fn new(status: u16, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from((status, code, message): Refusal) -> Self {
        ApiError::new(status, code, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"code": self.code, "message": self.message}).to_string();
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}

type Answered = Result<Response, ApiError>;

fn json_ok(v: &Value) -> Response {
    json_text(StatusCode::OK, v.to_string())
}

fn json_text(status: StatusCode, text: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

/// What every handler shares.
pub struct App {
    hub: Arc<Hub>,
    rate: RateLimiter,
    prometheus: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// Open streams per token digest.
    streams: Mutex<HashMap<String, usize>>,
    /// Replays for frames running at once (each reads and replays a log).
    frames: tokio::sync::Semaphore,
}

type Shared = State<Arc<App>>;

fn prometheus() -> Option<metrics_exporter_prometheus::PrometheusHandle> {
    static HANDLE: std::sync::OnceLock<Option<metrics_exporter_prometheus::PrometheusHandle>> =
        std::sync::OnceLock::new();
    HANDLE
        .get_or_init(|| {
            metrics_exporter_prometheus::PrometheusBuilder::new()
                .install_recorder()
                .ok()
        })
        .clone()
}

/// The API's routes over `hub`.
pub fn router(hub: Arc<Hub>) -> Router {
    let body_max = hub.options.max_body_bytes;
    let app = Arc::new(App {
        rate: RateLimiter::new(hub.options.rate_per_sec, hub.options.rate_burst),
        hub,
        prometheus: prometheus(),
        streams: Mutex::new(HashMap::new()),
        frames: tokio::sync::Semaphore::new(FRAMES_AT_ONCE),
    });
    Router::new()
        .route("/games", get(games))
        .route("/games/{game_id}", get(game))
        .route("/games/{game_id}/enqueue", post(enqueue))
        .route(
            "/games/{game_id}/matches",
            get(list_matches).post(create_match),
        )
        .route("/games/{game_id}/leaderboard", get(leaderboard))
        .route("/matches/{match_id}", get(match_summary))
        .route("/matches/{match_id}/join", post(join))
        .route("/matches/{match_id}/observation", get(observation))
        .route("/matches/{match_id}/actions", post(submit))
        .route("/matches/{match_id}/events", get(events))
        .route("/matches/{match_id}/spectate", get(spectate))
        .route("/matches/{match_id}/spectate/events", get(spectate_events))
        .route("/matches/{match_id}/frames", get(frame))
        .fallback(unknown_route)
        .layer(middleware::from_fn_with_state(app.clone(), rate_limit))
        .merge(crate::page::routes())
        .route("/health", get(health))
        .route("/metrics", get(metrics_text))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(body_max))
        .layer(middleware::from_fn(json_errors))
        .with_state(app)
}

/// Serves the API on `listener` until `stop` is ready, then stops
/// accepting connections (the listener closes) and answers the
/// connections still open, which [`Hub::begin_stop`] closes once their
/// request is answered.
pub async fn serve(
    listener: tokio::net::TcpListener,
    hub: Arc<Hub>,
    stop: impl std::future::Future<Output = ()>,
) -> Open {
    use axum::serve::Listener;
    use tower::ServiceExt;
    let max = hub.options.max_connections;
    let header_timeout = Duration::from_millis(hub.options.header_timeout_ms.max(1));
    let app = router(hub.clone());
    let mut listener = crate::limits::Limited::new(listener, max);
    let open = Open::default();
    tokio::pin!(stop);
    loop {
        let (conn, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => return open,
        };
        let app = app.clone();
        let held = open.hold();
        let mut stopping = hub.stopping();
        tokio::spawn(async move {
            let _held = held;
            let service = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    app.clone().oneshot(req.map(axum::body::Body::new))
                },
            );
            // A connection that does not send a whole request head in
            // time (idle, or dribbling) is closed: it cannot hold its
            // place under the connection limit.
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(conn), service);
            tokio::pin!(conn);
            // The connection first: a request that reached it before the
            // stop is read, and so answered.
            tokio::select! {
                biased;
                _ = conn.as_mut() => return,
                _ = stopping.wait_for(|s| *s) => {}
            }
            // The server stops: the request in flight is answered, then
            // the connection closes (an idle one closes now).
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
    }
}

/// The connections a server holds open (each task holds a [`Held`]).
#[derive(Default, Clone)]
pub struct Open {
    count: Arc<std::sync::atomic::AtomicUsize>,
    closed: Arc<tokio::sync::Notify>,
}

/// One open connection, counted until it is dropped.
pub struct Held(Open);

impl Drop for Held {
    fn drop(&mut self) {
        self.0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.closed.notify_waiters();
    }
}

impl Open {
    fn hold(&self) -> Held {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Held(self.clone())
    }

    /// Connections open now.
    pub fn count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until every connection has closed.
    pub async fn all_closed(&self) {
        loop {
            // Made before the count is read: a close in between wakes it.
            let closed = self.closed.notified();
            if self.count() == 0 {
                return;
            }
            closed.await;
        }
    }
}

/// Answers every error that is not JSON already (a body over the limit,
/// a wrong method) as `{code, message}`.
async fn json_errors(req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    let status = res.status();
    metrics::counter!("digipology_http_responses_total", "status" => status.as_u16().to_string())
        .increment(1);
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status.as_u16() < 400 || is_json {
        return res;
    }
    let (code, message) = match status.as_u16() {
        404 => ("unknown_route", "no such route (docs/server.md lists them)"),
        405 => ("method_not_allowed", "this route does not take that method"),
        413 => (
            "body_too_large",
            "the request body is over the server's limit",
        ),
        400 => {
            // The extractor's own text says what it could not read (a
            // query parameter's name and why): kept, within a bound.
            let why = axum::body::to_bytes(res.into_body(), REJECTION_TEXT_MAX)
                .await
                .ok()
                .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
                .filter(|t| !t.is_empty());
            let message = why.map_or_else(
                || "the request could not be read".to_owned(),
                |t| format!("the request could not be read: {t}"),
            );
            return ApiError::new(status.as_u16(), "bad_request", message).into_response();
        }
        _ => ("bad_request", "the request could not be read"),
    };
    ApiError::new(status.as_u16(), code, message).into_response()
}

/// Bytes of an extractor's refusal kept in a `bad_request` message.
const REJECTION_TEXT_MAX: usize = 1024;

async fn unknown_route() -> ApiError {
    ApiError::new(
        404,
        "unknown_route",
        "no such route (docs/server.md lists them)",
    )
}

/// The token a request carries: `Authorization: Bearer …`, or `token=`
/// in the query (for browsers' event streams).
fn token_of(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let (scheme, token) = v.trim().split_once(' ')?;
        return scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_owned());
    }
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(str::to_owned)
}

/// Each token the server gave has its own bucket; every other request
/// (no token, or one the server never gave) shares its peer address's.
async fn rate_limit(State(app): Shared, req: Request, next: Next) -> Response {
    let key = token_of(req.headers(), req.uri().query())
        .and_then(|t| app.hub.token(&t))
        .map(|h| h.digest)
        .unwrap_or_else(|| {
            let peer = req
                .extensions()
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip().to_string())
                .unwrap_or_default();
            format!("peer {peer}")
        });
    if !app.rate.allow(&key) {
        metrics::counter!("digipology_rate_limited_total").increment(1);
        let mut res = ApiError::new(
            429,
            "rate_limited",
            "too many requests: slow down and retry",
        )
        .into_response();
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return res;
    }
    next.run(req).await
}

/// `ok`, or — a room thread has been running one input for twice the
/// stall allowance, its game stopped but not yet ended (which metering
/// makes impossible for a game's own code) — `degraded`, with a 503 and
/// the count.
async fn health(State(app): Shared) -> Response {
    let stuck = app.hub.watchdog.stuck();
    if stuck == 0 {
        return json_ok(&json!({"status": "ok"}));
    }
    let body = json!({"status": "degraded", "stuckRoomThreads": stuck});
    (
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn metrics_text(State(app): Shared) -> Response {
    let (open, running, finished, loaded) = app.hub.counts();
    // Counts far below 2^52: exact as doubles.
    #[allow(clippy::cast_precision_loss)]
    for (status, n) in [("open", open), ("running", running), ("finished", finished)] {
        metrics::gauge!("digipology_matches", "status" => status).set(n as f64);
    }
    #[allow(clippy::cast_precision_loss)]
    metrics::gauge!("digipology_rooms_loaded").set(loaded as f64);
    let text = app
        .prometheus
        .as_ref()
        .map(|h| h.render())
        .unwrap_or_default();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        text,
    )
        .into_response()
}

async fn games(State(app): Shared) -> Response {
    let list: Vec<Value> = app
        .hub
        .games()
        .iter()
        .map(|g| json!({"id": g.id, "name": g.manifest["name"], "seats": g.manifest["seats"], "manifest": g.manifest}))
        .collect();
    json_ok(&Value::Array(list))
}

async fn game(State(app): Shared, Path(game_id): Path<String>) -> Answered {
    Ok(json_ok(&app.hub.game(&game_id)?.manifest))
}

/// A request body: a JSON object with only these keys (an empty body is
/// an empty object).
fn object(body: &Bytes, keys: &[&str]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        // `1e400` is JSON, but no finite number: the same refusal as a
        // non-finite number anywhere else.
        if e.to_string().starts_with("number out of range") {
            ApiError::new(
                400,
                "not_finite",
                format!("the body holds a number beyond the finite range (like 1e400): {e}"),
            )
        } else {
            ApiError::new(400, "malformed_json", format!("the body is not JSON: {e}"))
        }
    })?;
    let Value::Object(m) = v else {
        return Err(ApiError::new(
            400,
            "invalid_type",
            "the body must be a JSON object",
        ));
    };
    if let Some(k) = m.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(ApiError::new(
            400,
            "unknown_key",
            format!("unknown key {k:?} (this route takes {})", keys.join(", ")),
        ));
    }
    Ok(m)
}

/// An optional string field of at most `max` bytes.
fn text(m: &Map<String, Value>, key: &str, max: usize) -> Result<Option<String>, ApiError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(ApiError::new(
            400,
            "invalid_value",
            format!("{key} must be 1 to {max} bytes"),
        )),
        Some(_) => Err(ApiError::new(
            400,
            "invalid_type",
            format!("{key} must be a string"),
        )),
    }
}

fn flag(m: &Map<String, Value>, key: &str) -> Result<bool, ApiError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::new(
            400,
            "invalid_type",
            format!("{key} must be true or false"),
        )),
    }
}

/// Waits until the lobby's writes are durable.
async fn durable(receipts: crate::hub::Receipts) -> Result<(), ApiError> {
    for d in receipts {
        match d.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(ApiError::new(500, "store", e)),
            Err(_) => return Err(ApiError::new(503, "store", "the room log stopped")),
        }
    }
    Ok(())
}

/// Waits for the writes a new seat needs, then hands out its token.
async fn joined(j: crate::hub::Joined) -> Answered {
    durable(j.durable).await?;
    Ok(json_ok(
        &json!({"matchId": j.match_id, "seat": j.seat, "playerId": j.player_id, "token": j.token}),
    ))
}

async fn enqueue(State(app): Shared, Path(game_id): Path<String>, body: Bytes) -> Answered {
    let m = object(&body, &["name", "bots"])?;
    let req = JoinRequest {
        name: text(&m, "name", 64)?,
        seat: None,
    };
    let bots = flag(&m, "bots")?;
    joined(app.hub.enqueue(&game_id, req, bots)?).await
}

async fn join(State(app): Shared, Path(match_id): Path<String>, body: Bytes) -> Answered {
    let m = object(&body, &["name", "seat"])?;
    let req = JoinRequest {
        name: text(&m, "name", 64)?,
        seat: text(&m, "seat", 128)?,
    };
    joined(app.hub.join(&match_id, req)?).await
}

async fn create_match(State(app): Shared, Path(game_id): Path<String>, body: Bytes) -> Answered {
    let m = object(&body, &["seed", "match", "bots"])?;
    let seed = match m.get("seed") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().filter(|s| *s < (1 << 53)).ok_or_else(|| {
            ApiError::new(
                400,
                "invalid_value",
                "seed must be an integer from 0 to 2^53 - 1",
            )
        })?),
    };
    let config = match m.get("match") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.clone()),
        Some(_) => {
            return Err(ApiError::new(
                400,
                "invalid_type",
                "match must be an object",
            ))
        }
    };
    let bots = match m.get("bots") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => v
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|s| s.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| ApiError::new(400, "invalid_type", "bots must be a list of seat ids"))?,
    };
    let create = Create { seed, config, bots };
    let (summary, receipts) = app.hub.create(&game_id, create)?;
    durable(receipts).await?;
    Ok(json_text(StatusCode::CREATED, summary.to_string()))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    status: Option<String>,
    /// At most this many (1 to 500; 100 when absent).
    limit: Option<usize>,
    /// Only matches listed after this one (a page's last `matchId` gives
    /// the next page).
    before: Option<String>,
}

async fn list_matches(
    State(app): Shared,
    Path(game_id): Path<String>,
    Query(q): Query<ListQuery>,
) -> Answered {
    app.hub.game(&game_id)?;
    let status = q.status.as_deref();
    if let Some(s) = status {
        if !["open", "running", "finished"].contains(&s) {
            return Err(ApiError::new(
                400,
                "invalid_value",
                "status is open, running or finished",
            ));
        }
    }
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::new(400, "invalid_value", "limit is 1 to 500"));
    }
    let page = app
        .hub
        .matches_of(&game_id, status, limit, q.before.as_deref())?;
    Ok(json_ok(&Value::Array(page)))
}

async fn leaderboard(State(app): Shared, Path(game_id): Path<String>) -> Answered {
    app.hub.game(&game_id)?;
    Ok(json_ok(
        &json!({"gameId": game_id, "standings": app.hub.leaderboard(&game_id)}),
    ))
}

async fn match_summary(State(app): Shared, Path(match_id): Path<String>) -> Answered {
    app.hub
        .summary(&match_id)
        .map(|s| json_ok(&s))
        .ok_or_else(|| ApiError::new(404, "unknown_match", format!("no match {match_id:?} here")))
}

/// The seat a request's token holds in `match_id`.
fn seat_for(
    app: &App,
    headers: &HeaderMap,
    query: Option<&str>,
    match_id: &str,
) -> Result<(String, String), ApiError> {
    let token = token_of(headers, query).ok_or_else(|| {
        ApiError::new(
            401,
            "missing_token",
            "send the seat token as `Authorization: Bearer <token>`",
        )
    })?;
    let holder = app.hub.token(&token).ok_or_else(|| {
        ApiError::new(
            401,
            "unknown_token",
            "this token is not one the server gave",
        )
    })?;
    if holder.match_id != match_id {
        return Err(ApiError::new(
            403,
            "wrong_match",
            "this token is for another match",
        ));
    }
    Ok((holder.seat, holder.digest))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PollQuery {
    after: Option<u64>,
    wait_ms: Option<u64>,
    /// The seat token, for clients that cannot set headers (read by
    /// `token_of`).
    #[allow(dead_code)]
    token: Option<String>,
}

/// Waits until the room has processed a sequence after `after` (or the
/// match is over, or `wait` passes, or the server stops).
async fn wait_after(
    app: &App,
    feed: &Feed,
    after: Option<u64>,
    wait: Duration,
) -> Result<(), ApiError> {
    let Some(after) = after else {
        return Ok(());
    };
    let mut rx = feed.watch();
    let ready = |t: &Tick| t.stopped || t.over || t.next > after.saturating_add(1);
    let mut stopping = app.hub.stopping();
    tokio::select! {
        _ = tokio::time::timeout(wait, rx.wait_for(ready)) => {}
        _ = stopping.wait_for(|s| *s) => {}
    }
    if feed.tick().stopped {
        return Err(unavailable());
    }
    Ok(())
}

/// A room's queue refused a command: full (retry), or the room stopped.
fn queue_error<T>(e: tokio::sync::mpsc::error::TrySendError<T>) -> ApiError {
    match e {
        tokio::sync::mpsc::error::TrySendError::Full(_) => ApiError::new(
            503,
            "room_busy",
            "the room's queue is full; retry (with the same clientActionId)",
        ),
        tokio::sync::mpsc::error::TrySendError::Closed(_) => unavailable(),
    }
}

fn unavailable() -> ApiError {
    ApiError::new(
        503,
        "room_unavailable",
        "this room stopped (the server's log says why); the next start tries again",
    )
}

async fn observe(app: &App, handle: &Handle, viewer: Viewer, q: &PollQuery) -> Answered {
    wait_after(app, &handle.feed, q.after, poll_wait(app, q)).await?;
    let (reply, rx) = oneshot::channel();
    handle
        .tx
        .try_send(Cmd::Observe { viewer, reply })
        .map_err(queue_error)?;
    let doc = rx.await.map_err(|_| unavailable())?;
    Ok(json_ok(&doc))
}

async fn observation(
    State(app): Shared,
    Path(match_id): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Query(q): Query<PollQuery>,
) -> Answered {
    let (seat, _) = seat_for(&app, &headers, uri.query(), &match_id)?;
    let handle = started(&app, &match_id, &q).await?;
    observe(&app, &handle, Viewer::Seat(seat.as_str().into()), &q).await
}

/// A match's room; with `after` (a long poll), a match still waiting for
/// players is waited for, up to the poll's time.
async fn started(app: &App, match_id: &str, q: &PollQuery) -> Result<Handle, ApiError> {
    let deadline = tokio::time::Instant::now() + poll_wait(app, q);
    loop {
        match app.hub.handle(match_id) {
            Err((409, "not_started", _))
                if q.after.is_some()
                    && tokio::time::Instant::now() < deadline
                    && !app.hub.is_stopping() =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other.map_err(ApiError::from),
        }
    }
}

fn poll_wait(app: &App, q: &PollQuery) -> Duration {
    let max = app.hub.options.long_poll_max_ms;
    Duration::from_millis(q.wait_ms.unwrap_or(max).min(max))
}

async fn spectate(
    State(app): Shared,
    Path(match_id): Path<String>,
    Query(q): Query<PollQuery>,
) -> Answered {
    let handle = started(&app, &match_id, &q).await?;
    observe(&app, &handle, Viewer::Spectator, &q).await
}

/// Checks an attempt's action: `{type, payload}`, and a `source` only if
/// it is the seat's own.
fn check_action(action: Option<&Value>, player: &str) -> Result<Value, ApiError> {
    let Some(Value::Object(a)) = action else {
        return Err(ApiError::new(
            400,
            "invalid_type",
            "action must be an object {type, payload}",
        ));
    };
    if let Some(k) = a
        .keys()
        .find(|k| !["type", "payload", "source"].contains(&k.as_str()))
    {
        return Err(ApiError::new(
            400,
            "unknown_key",
            format!(
                "unknown action key {k:?}: the server sets the time and ids; send type and payload"
            ),
        ));
    }
    let Some(Value::String(ty)) = a.get("type") else {
        return Err(ApiError::new(
            400,
            "invalid_type",
            "action.type must be a string",
        ));
    };
    if let Some(source) = a.get("source") {
        if *source != json!({"kind": "player", "playerId": player}) {
            return Err(ApiError::new(
                403,
                "forged_source",
                "a seat acts only as its own player; leave source out",
            ));
        }
    }
    let payload = match a.get("payload") {
        None => json!({}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => {
            return Err(ApiError::new(
                400,
                "invalid_type",
                "action.payload must be an object",
            ))
        }
    };
    // The manifest's schema, before the room: a malformed attempt is
    // refused here and never logged (nor metered: docs/match.md).
    if let Err(r) = digipology_room::matches::schema::check(ty, &payload) {
        let code = r.code.as_str();
        let status = if code == "source_not_allowed" {
            403
        } else {
            400
        };
        let code = if status == 403 {
            "not_a_player_action"
        } else {
            code
        };
        return Err(ApiError::new(status, code, r.message));
    }
    Ok(json!({"type": ty, "payload": payload}))
}

async fn submit(
    State(app): Shared,
    Path(match_id): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    body: Bytes,
) -> Answered {
    let started = std::time::Instant::now();
    let (seat, _) = seat_for(&app, &headers, uri.query(), &match_id)?;
    let m = object(&body, &["clientActionId", "action"])?;
    let client_id = text(&m, "clientActionId", 128)?.ok_or_else(|| {
        ApiError::new(
            400,
            "missing_field",
            "clientActionId is required (any id of yours, 1 to 128 bytes)",
        )
    })?;
    let player = app.hub.player_of(&match_id, &seat).unwrap_or_default();
    let action = check_action(m.get("action"), &player)?;
    let handle = app.hub.handle(&match_id)?;
    let (reply, rx) = oneshot::channel();
    handle
        .tx
        .try_send(Cmd::Submit {
            seat,
            client_id,
            action,
            reply,
        })
        .map_err(queue_error)?;
    let answer = rx.await.map_err(|_| unavailable())?;
    metrics::histogram!("digipology_submit_seconds").record(started.elapsed().as_secs_f64());
    match answer {
        Answer::Done(text) => {
            metrics::counter!("digipology_actions_acknowledged_total").increment(1);
            Ok(json_text(StatusCode::OK, text))
        }
        Answer::Reused => Err(ApiError::new(
            409,
            "client_action_id_reused",
            "this clientActionId was used for another action",
        )),
        Answer::Unavailable(code, message) => Err(ApiError::new(409, code, message)),
    }
}

/// Frames replayed at once; more are answered `503 room_busy`.
const FRAMES_AT_ONCE: usize = 2;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FrameQuery {
    seq: Option<u64>,
    #[allow(dead_code)]
    token: Option<String>,
}

/// A past moment of the match (the replay scrubber): the seat's view with
/// its token, the spectators' without.
async fn frame(
    State(app): Shared,
    Path(match_id): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Query(q): Query<FrameQuery>,
) -> Answered {
    let viewer = if token_of(&headers, uri.query()).is_some() {
        let (seat, _) = seat_for(&app, &headers, uri.query(), &match_id)?;
        Viewer::Seat(seat.as_str().into())
    } else {
        Viewer::Spectator
    };
    let Ok(_permit) = app.frames.try_acquire() else {
        return Err(ApiError::new(
            503,
            "room_busy",
            "the server is replaying other matches; try again in a moment",
        ));
    };
    let hub = app.hub.clone();
    let seq = q.seq.unwrap_or(u64::MAX);
    let frame = tokio::task::spawn_blocking(move || hub.frame(&match_id, &viewer, seq))
        .await
        .map_err(|_| ApiError::new(500, "internal", "the replay failed"))??;
    Ok(json_ok(&frame))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamQuery {
    after: Option<u64>,
    /// Each event line also carries `text`, its sentence (the table page's
    /// log; `digipology run --format text` prints the same).
    text: Option<bool>,
    /// `false`: send what is there now, then end (a still picture).
    follow: Option<bool>,
    #[allow(dead_code)]
    token: Option<String>,
}

/// Tells the room a seat's stream closed, and frees its place, when the
/// stream is dropped.
struct StreamGuard {
    app: Arc<App>,
    handle: Handle,
    seat: String,
    token: String,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        // Told even when the room's queue is full for a moment (a lost
        // close would leave the seat never disconnected).
        // Not when the server stops: its closing every stream is no seat
        // leaving (the room stops before a grace could pass).
        let tx = self.handle.tx.clone();
        let seat = std::mem::take(&mut self.seat);
        let stopping = self.app.hub.is_stopping();
        if let (Ok(rt), false) = (tokio::runtime::Handle::try_current(), stopping) {
            rt.spawn(async move {
                let _ = tx.send(Cmd::StreamClosed(seat)).await;
            });
        }
        if let Ok(mut s) = self.app.streams.lock() {
            if let Some(n) = s.get_mut(&self.token) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    s.remove(&self.token);
                }
            }
        }
    }
}

struct StreamState {
    feed: Arc<Feed>,
    viewer: String,
    cursor: Option<u64>,
    rx: tokio::sync::watch::Receiver<Tick>,
    /// The server stopping ends the stream.
    stopping: tokio::sync::watch::Receiver<bool>,
    pending: VecDeque<(u64, String)>,
    ended: bool,
    /// Whether each line carries its sentence (`text=true`).
    text: bool,
    /// Whether it waits for more once it has sent everything (`follow`).
    follow: bool,
    /// Reload notices seen (those before the stream opened count as seen).
    reloads: u32,
    _guard: Option<StreamGuard>,
}

impl StreamState {
    /// A stream of `viewer`'s feed from after the request's last id.
    fn new(
        app: &App,
        handle: &Handle,
        viewer: String,
        headers: &HeaderMap,
        q: &StreamQuery,
        guard: Option<StreamGuard>,
    ) -> StreamState {
        StreamState {
            rx: handle.feed.watch(),
            stopping: app.hub.stopping(),
            feed: handle.feed.clone(),
            viewer,
            cursor: last_event_id(headers, q.after),
            pending: VecDeque::new(),
            ended: false,
            text: q.text == Some(true),
            follow: q.follow != Some(false),
            reloads: handle.feed.tick().reloads,
            _guard: guard,
        }
    }

    fn into_response(self) -> Response {
        Sse::new(feed_stream(self))
            .keep_alive(KeepAlive::default())
            .into_response()
    }
}

/// The stream's messages: one per sequence the viewer sees something of
/// (`id:` the sequence, `data:` its events as JSON lines), then `over`
/// once the match has a result and everything before it went out.
fn feed_stream(st: StreamState) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(st, |mut st| async move {
        loop {
            if let Some((seq, lines)) = st.pending.pop_front() {
                st.cursor = Some(seq);
                let lines = if st.text {
                    with_sentences(&lines)
                } else {
                    lines
                };
                let ev = Event::default()
                    .id(seq.to_string())
                    .event("events")
                    .data(lines);
                return Some((Ok(ev), st));
            }
            // Ended once what was taken from the feed went out: the
            // client resumes from its last id when the server is back.
            if st.ended || *st.stopping.borrow() {
                return None;
            }
            let tick = *st.rx.borrow_and_update();
            if tick.reloads != st.reloads {
                st.reloads = tick.reloads;
                let ev = Event::default().event("reload").data(st.feed.last_notice());
                return Some((Ok(ev), st));
            }
            let batch = st.feed.since(&st.viewer, st.cursor, STREAM_BATCH);
            if !batch.is_empty() {
                st.pending.extend(batch);
                continue;
            }
            if tick.stopped {
                return None;
            }
            if tick.over {
                st.ended = true;
                let last = tick.next.saturating_sub(1);
                let ev = Event::default()
                    .event("over")
                    .data(json!({"seq": last}).to_string());
                return Some((Ok(ev), st));
            }
            if !st.follow {
                return None;
            }
            tokio::select! {
                changed = st.rx.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                _ = st.stopping.wait_for(|s| *s) => return None,
            }
        }
    })
}

/// The viewer's event lines, each with its sentence as `text`: made from
/// the line itself (the viewer's own projection), so it says no more.
fn with_sentences(lines: &str) -> String {
    let mut out = String::with_capacity(lines.len() * 2);
    for line in lines.lines() {
        if !out.is_empty() {
            out.push('\n');
        }
        // The event's own bytes, then its sentence as the last key.
        match (serde_json::from_str::<Value>(line), line.strip_suffix('}')) {
            (Ok(event), Some(open)) if event.is_object() => {
                let text = Value::String(digipology_room::sentence::sentence(&event));
                out.push_str(open);
                if !open.ends_with('{') {
                    out.push(',');
                }
                out.push_str("\"text\":");
                out.push_str(&text.to_string());
                out.push('}');
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Sequences a stream takes from the feed at a time.
const STREAM_BATCH: usize = 256;

fn last_event_id(headers: &HeaderMap, after: Option<u64>) -> Option<u64> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .or(after)
}

async fn events(
    State(app): Shared,
    Path(match_id): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Query(q): Query<StreamQuery>,
) -> Answered {
    let (seat, token) = seat_for(&app, &headers, uri.query(), &match_id)?;
    let handle = app.hub.handle(&match_id)?;
    {
        let mut streams = app
            .streams
            .lock()
            .map_err(|_| ApiError::new(500, "internal", "stream count"))?;
        let n = streams.entry(token.clone()).or_default();
        if *n >= app.hub.options.max_streams_per_token {
            return Err(ApiError::new(
                429,
                "too_many_streams",
                "this token has its most streams open; close one",
            ));
        }
        *n += 1;
    }
    let guard = StreamGuard {
        app: app.clone(),
        handle: handle.clone(),
        seat: seat.clone(),
        token,
    };
    handle
        .tx
        .send(Cmd::StreamOpened(seat.clone()))
        .await
        .map_err(|_| unavailable())?;
    Ok(StreamState::new(&app, &handle, seat, &headers, &q, Some(guard)).into_response())
}

async fn spectate_events(
    State(app): Shared,
    Path(match_id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<StreamQuery>,
) -> Answered {
    let handle = app.hub.handle(&match_id)?;
    let viewer = SPECTATOR.to_owned();
    Ok(StreamState::new(&app, &handle, viewer, &headers, &q, None).into_response())
}
