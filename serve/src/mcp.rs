//! The MCP server (Model Context Protocol, on the official Rust SDK `rmcp`): the read tools
//! and `remember`, for agents. Served as Streamable HTTP at `/mcp` on the API listener (the
//! bearer token of each request names the principal, as for `/v1`) and over stdio by
//! `kledger mcp` (the principal `mcp.principal` names).
//!
//! Every tool is one call of the function the HTTP endpoint calls (`search_knowledge`,
//! `read_playbook`, `entity_timeline`, `profile_answer`, the ingress's `submit`): the same
//! access path, the same bounds, the same uniform `unavailable`; nothing is answered that HTTP
//! would not answer. An error is a tool result marked as an error, holding the API's error
//! object (`{"error": {"code", "message"}}`).
//!
//! Read-your-writes: `remember` answers with the receipt's consistency token, and the server
//! keeps the newest token of each account a principal wrote to (a bounded cache shared by the
//! sessions of one listener: the 2026-07-28 protocol serves requests without sessions, so the
//! principal is what ties a read to its writes). Later reads of that account by that principal
//! wait for it unless they name their own `min_commit_seq`.
//!
//! May not touch: the stores (through the API's functions only).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::request::Parts;
use kledger_processors::access::Principal;
use kledger_schemas::{
    AssertOp, AssertionClass, Evidence, Extractor, Intent, Kind, Locator, Op, Sensitivity,
    SensitivityLevel, Source, Subject, SubjectScope, Tenant, Visibility, WriteReason,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::api::conversations::ConversationQuery;
use super::api::read::{ProfileParams, after_wait, blocking};
use super::api::search::SearchRequest;
use super::api::timeline::TimelineParams;
use super::api::{Api, ApiError};

/// How long `remember` waits for its receipt, ms.
pub const REMEMBER_WAIT_MS: u64 = 10_000;

/// Where a session's principal comes from.
#[derive(Debug, Clone)]
enum Auth {
    /// Each HTTP request's bearer token.
    Bearer,
    /// One principal (stdio).
    Fixed(Principal),
}

/// Consistency tokens kept at most (principal and account pairs).
pub const TOKENS_MAX: usize = 10_000;

/// The newest consistency token `remember` returned, by principal and account.
pub type Tokens = Arc<quick_cache::sync::Cache<(String, String), i64>>;

/// A fresh store of consistency tokens, bounded by [`TOKENS_MAX`].
pub fn tokens() -> Tokens {
    Arc::new(quick_cache::sync::Cache::new(TOKENS_MAX))
}

/// The MCP tools over one API, with the consistency tokens of the principals' writes.
#[derive(Clone)]
pub struct McpServer {
    api: Api,
    auth: Auth,
    tokens: Tokens,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("auth", &matches!(self.auth, Auth::Bearer))
            .finish_non_exhaustive()
    }
}

// The read tools take the HTTP endpoints' own request types (`SearchRequest`, `ProfileParams`,
// `TimelineParams`), with the path's id beside them where the endpoint has one: a field added
// to an endpoint is a tool argument too, described once.

/// What a read waits for: the account read (default: the caller's own), its
/// `min_commit_seq` and `wait_ms`.
type At = (Option<String>, Option<i64>, Option<u64>);

/// The read-your-writes fields the read tools' arguments carry.
trait ReadAt {
    fn at(&self) -> At;
}

macro_rules! read_at {
    ($($t:ty),*) => {$(
        impl ReadAt for $t {
            fn at(&self) -> At {
                (self.account.clone(), self.min_commit_seq, self.wait_ms)
            }
        }
    )*};
}
read_at!(
    SearchRequest,
    ProfileParams,
    TimelineParams,
    ConversationQuery
);

/// `read_playbook`'s arguments: the id `GET /v1/playbooks/{id}` takes in its path, and its
/// query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PlaybookArgs {
    /// The playbook's memory id (a `document` handle from search or the profile's index).
    pub memory_id: String,
    #[serde(flatten)]
    pub at: ProfileParams,
}

/// `get_entity_timeline`'s arguments: the entity `GET /v1/entities/{entity}/timeline` takes in
/// its path, and its query.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TimelineArgs {
    /// `user` for the account's own person, or a stable entity id (`person_…`).
    pub entity: String,
    #[serde(flatten)]
    pub params: TimelineParams,
}

/// `remember`'s arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RememberArgs {
    /// The fact, one line in the third person ("Lives in Porto", "Allergic to penicillin").
    pub content: String,
    /// The stable slot it fills, if one: "home_city", "employer" or "age_years" (one value per
    /// slot: a slot another row holds answers `replan`, and that row can be passed in
    /// `replaces`).
    #[serde(default)]
    pub slot: Option<String>,
    /// The person it is about when not the user: a stable entity id (`person_…`).
    #[serde(default)]
    pub about: Option<String>,
    /// Memory ids of rows this one replaces (they are superseded in the same commit).
    #[serde(default)]
    pub replaces: Vec<String>,
    /// Short tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// A stable id for this write, to make a retry idempotent (default: derived from the
    /// account, the content, the slot, the rows replaced, the provenance given and the
    /// session's agent).
    #[serde(default)]
    pub action_id: Option<String>,
    /// What the fact was taken from: its id (a conversation, a document, a ticket; ≤256
    /// chars; default `mcp`).
    #[serde(default)]
    pub source_id: Option<String>,
    /// Its kind (`conversation`, `chat_message`, `document`, `email`, `calendar`, …; ≤64
    /// chars; default `agent_tool`): the authority table ranks by it, so the types it ranks
    /// above a calendar (`system_of_record`, `approved_decision`, `signed_document`,
    /// `document`) are refused (`bad_source_type`).
    #[serde(default)]
    pub source_type: Option<String>,
    /// Its version as it was looked at (a message id, a revision, an edit time; ≤64 chars;
    /// default: a digest of the fact, so the same fact again is the same version).
    #[serde(default)]
    pub source_version: Option<String>,
    /// The conversation the fact came from, when the client has one: kept as evidence.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// The message inside it (its id), when the client has one: the evidence's locator.
    #[serde(default)]
    pub message_id: Option<String>,
}

fn error_result(e: &ApiError) -> CallToolResult {
    let mut body = serde_json::json!({"error": {"code": e.code(), "message": e.message()}});
    if let Some(d) = e.detail() {
        body["error"]["detail"] = d.clone();
    }
    CallToolResult::structured_error(body)
}

fn answer<T: serde::Serialize>(r: Result<T, ApiError>) -> Result<CallToolResult, rmcp::ErrorData> {
    Ok(match r {
        Ok(v) => CallToolResult::structured(
            serde_json::to_value(v)
                .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))?,
        ),
        Err(e) => error_result(&e),
    })
}

impl McpServer {
    /// The server of the `/mcp` endpoint: each request's bearer token names its principal.
    pub fn http(api: Api, tokens: Tokens) -> Self {
        Self::new(api, Auth::Bearer, tokens)
    }

    /// A stdio server with one principal.
    pub fn stdio(api: Api, principal: Principal) -> Self {
        Self::new(api, Auth::Fixed(principal), tokens())
    }

    fn new(api: Api, auth: Auth, tokens: Tokens) -> Self {
        Self {
            api,
            auth,
            tokens,
            tool_router: Self::tool_router(),
        }
    }

    /// The principal of a call: the request's bearer token (HTTP), or the session's.
    fn principal(&self, parts: Option<&Parts>) -> Result<Principal, ApiError> {
        let unauthorized = || {
            ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token is required",
            )
        };
        match &self.auth {
            Auth::Fixed(p) => Ok(p.clone()),
            Auth::Bearer => parts
                .and_then(|p| p.headers.get(axum::http::header::AUTHORIZATION))
                .and_then(|v| v.to_str().ok())
                .and_then(|v| super::api::principal_of_header(&self.api, v))
                .ok_or_else(unauthorized),
        }
    }

    /// The `min_commit_seq` a read of `account` waits for: its own, else this session's
    /// newest write to the account.
    fn min_seq(&self, p: &Principal, account: Option<&str>, asked: Option<i64>) -> Option<i64> {
        let account = account.map_or_else(|| p.account_id(), str::to_owned);
        asked.or_else(|| self.tokens.get(&(p.account_id(), account)))
    }

    /// A read: runs `f` on a blocking thread with the call's principal and the
    /// `min_commit_seq` it waits for ([`McpServer::min_seq`]; waited for first, up to `wait_ms`,
    /// holding no thread), the principal resolved once.
    async fn read<T: serde::Serialize + Send + 'static>(
        &self,
        ctx: &RequestContext<RoleServer>,
        (account, asked, wait_ms): At,
        vectors: bool,
        f: impl FnOnce(&Api, &Principal, Option<i64>) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let parts = ctx.extensions.get::<Parts>();
        let p = match self.principal(parts) {
            Ok(p) => p,
            Err(e) => return Ok(error_result(&e)),
        };
        let account = account.as_deref();
        let min = self.min_seq(&p, account, asked);
        let api = self.api.clone();
        let p2 = p.clone();
        answer(
            after_wait(&self.api, &p2, account, min, wait_ms, vectors, move || {
                f(&api, &p, min)
            })
            .await,
        )
    }
}

#[tool_router]
impl McpServer {
    #[tool(
        description = "Search the user's knowledge ledger (durable facts, playbooks and standing reminders) by meaning and keywords. Returns up to `limit` handles: memory id, kind, slot, the one-line content and how certain it is; never a playbook's body (call read_playbook) or a reminder's condition. Only what the caller may read is searched."
    )]
    async fn search_knowledge(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(a): Parameters<SearchRequest>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let at = a.at();
        self.read(&ctx, at, true, move |api, p, min| {
            super::api::search::search_knowledge(
                api,
                p,
                SearchRequest {
                    min_commit_seq: min,
                    ..a
                },
            )
        })
        .await
    }

    #[tool(
        description = "Bounded conversation retrieval (when the deployment enables it; off by default): for a question the ledger does not answer, the conversations whose summaries match `query` literally or by meaning, narrowed to one person (`entity`: a person id or an exact alias) and/or one UTC day (`date`, YYYY-MM-DD; a date or a person alone lists that day's or person's conversations). One reformulation is tried before it reports `no_result`. Each conversation comes with at most three transcript snippets that hold a term of the query, or else its first 24 segments — never more. Only what the caller may read."
    )]
    async fn search_conversations(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(a): Parameters<ConversationQuery>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let at = a.at();
        self.read(&ctx, at, false, move |api, p, min| {
            let q = ConversationQuery {
                min_commit_seq: min,
                ..a
            };
            super::api::conversations::search_conversations(api, p, &q)
        })
        .await
    }

    #[tool(
        description = "Read one playbook (a document row: a routine or workflow the user keeps) by its memory id: its description and body. Missing, foreign, inactive or unreadable ids all answer the same `unavailable`."
    )]
    async fn read_playbook(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(a): Parameters<PlaybookArgs>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let PlaybookArgs { memory_id, at } = a;
        self.read(&ctx, at.at(), false, move |api, p, min| {
            let at = ProfileParams {
                min_commit_seq: min,
                ..at
            };
            super::api::read::read_playbook(api, p, &memory_id, &at)
        })
        .await
    }

    #[tool(
        description = "The timeline of one entity the agent has already identified: `user` for the account's own person, a person id, or an exact alias of a person (a name or an email). Reads only the sources named in `sources` (comma-separated: `ledger` — the default —, `conversations`, `calendar`, `screen`). Compact entries (source, kind, one-line content: a fact, a conversation summary, an event title, an app and window title; status, validity) in time order, the newest `limit`; never transcripts, notes, attendees or OCR text. The answer says whom the entity resolved to (`person`, or `unavailable` — never a guess) and each source's `state` (available, loading, offline, pruned, failed, truncated). Superseded or closed ledger rows only with `history`, disputed ones only with `audit`."
    )]
    async fn get_entity_timeline(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(a): Parameters<TimelineArgs>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let TimelineArgs { entity, params } = a;
        self.read(&ctx, params.at(), false, move |api, p, min| {
            let params = TimelineParams {
                min_commit_seq: min,
                ..params
            };
            super::api::timeline::entity_timeline(api, p, &entity, &params)
        })
        .await
    }

    #[tool(
        description = "The user's profile: the current, confirmed stable facts (home city, employer, …) as short lines, and the index of playbooks (`memory_id: description`). Bounded to 2,400 and 800 characters."
    )]
    async fn get_profile(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(a): Parameters<ProfileParams>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let at = a.at();
        self.read(&ctx, at, false, move |api, p, min| {
            let a = ProfileParams {
                min_commit_seq: min,
                ..a
            };
            super::api::read::profile_answer(api, p, &a)
        })
        .await
    }

    #[tool(
        description = "Remember a fact the user explicitly asked you to remember, in their own account. Answers with the ledger's receipt: `committed` (with the new memory ids and a consistency_token that later reads in this session wait for), `duplicate` (already remembered), `replan` (the slot is held by another row: call again with that row in `replaces`, see stale_targets) or `rejected` (with a code)."
    )]
    async fn remember(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(a): Parameters<RememberArgs>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let parts = ctx.extensions.get::<Parts>().cloned();
        let p = match self.principal(parts.as_ref()) {
            Ok(p) => p,
            Err(e) => return Ok(error_result(&e)),
        };
        let api = self.api.clone();
        let p2 = p.clone();
        let intent = match blocking(move || remember_intent(&api, &p2, a)).await {
            Ok(i) => i,
            Err(e) => return Ok(error_result(&e)),
        };
        let account = intent.account_id.clone();
        let answered = super::api::ingress::submit(&self.api, &p, intent, REMEMBER_WAIT_MS).await;
        if let Ok(a) = &answered
            && let Some(t) = a.consistency_token
        {
            let key = (p.account_id(), account);
            let newest = self.tokens.get(&key).map_or(t, |held| held.max(t));
            self.tokens.insert(key, newest);
        }
        answer(answered)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "kledger: the user's knowledge ledger. search_knowledge finds facts, playbooks and reminders; read_playbook opens a playbook; get_entity_timeline lists what is known about one person; get_profile gives the stable facts; remember stores a fact the user asked you to remember. Reads accept as_of (effective time) and known_at (record time), in ms since the epoch.",
        )
    }
}

/// The highest authority adjustment a `remember` may claim with its `source_type` (a
/// calendar's, an email's).
const REMEMBER_SOURCE_ADJUSTMENT_MAX: i32 = 10;

/// The `explicit_remember` intent of `a` in `p`'s own account, planned against the account's
/// head and the rows it replaces as the view store holds them.
fn remember_intent(api: &Api, p: &Principal, a: RememberArgs) -> Result<Intent, ApiError> {
    let account = p.account_id();
    let views = api.views.get();
    let head_seq = views.mark(&account)?.commit_seq;
    let mut targets = Vec::with_capacity(a.replaces.len());
    for id in &a.replaces {
        let row = views
            .row(&account, id)?
            .filter(|r| kledger_processors::access::may_read(p, r))
            .ok_or_else(ApiError::unavailable)?;
        targets.push(kledger_schemas::TargetRef {
            memory_id: row.memory_id,
            revision: row.revision,
            content_hash: row.content_hash,
        });
    }
    // An agent may not lift its write above the user's own words: source types the authority
    // table ranks above a calendar are an extractor's to claim (with `role_ingest`).
    if let Some(t) = &a.source_type
        && kledger_processors::authority::source_adjustment(t) > REMEMBER_SOURCE_ADJUSTMENT_MAX
    {
        return Err(ApiError::bad(
            "bad_source_type",
            format!(
                "remember cannot claim source type {t}: the authority table ranks it above what an agent may write"
            ),
        ));
    }
    // The action is the fact and where it came from: the same fact from another conversation,
    // message or agent is another write (the same one again is a `duplicate`).
    let author_part = p.agent_id.clone().unwrap_or_default();
    let digest = {
        let mut h = Sha256::new();
        for part in [
            account.as_str(),
            &a.content,
            a.slot.as_deref().unwrap_or(""),
        ]
        .into_iter()
        .chain(a.replaces.iter().map(String::as_str))
        .chain(
            [
                a.source_id.as_deref(),
                a.source_type.as_deref(),
                a.source_version.as_deref(),
                a.conversation_id.as_deref(),
                a.message_id.as_deref(),
                Some(author_part.as_str()),
            ]
            .into_iter()
            .map(|s| s.unwrap_or("")),
        ) {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        kledger_processors::ids::to_hex(&h.finalize())
    };
    let action_id = a
        .action_id
        .clone()
        .unwrap_or_else(|| format!("mcp-remember-{}", &digest[..32]));
    // Where it came from: the conversation (and message) the client names, as evidence.
    let evidence: Vec<Evidence> = a
        .conversation_id
        .iter()
        .map(|c| Evidence {
            source_type: "conversation".into(),
            source_id: c.clone(),
            source_version: a.message_id.clone().unwrap_or_default(),
            locator: Locator {
                message_id: a.message_id.clone(),
                ..Locator::default()
            },
            quote: None,
            checksum: None,
        })
        .collect();
    // The session's agent and principal: `agt_…@kind/owner` (the tenant is the intent's), or
    // the principal alone; within the field's bound.
    let principal = format!("{}/{}", p.owner_kind, p.owner_id);
    let author: String = match &p.agent_id {
        Some(agent) => format!("{agent}@{principal}"),
        None => principal,
    }
    .chars()
    .take(kledger_schemas::limits::SHORT_CHARS_MAX)
    .collect();
    let subject = match &a.about {
        None => Subject {
            scope: SubjectScope::PrimaryUser,
            entity_id: None,
        },
        Some(e) => Subject {
            scope: SubjectScope::ThirdParty,
            entity_id: Some(e.clone()),
        },
    };
    let assert = AssertOp {
        kind: Kind::Fact,
        content: a.content,
        body: None,
        condition: None,
        slot: a.slot,
        subject,
        valid_from: None,
        valid_to: None,
        expires_at: None,
        assertion_class: AssertionClass::Confirmed,
        confidence: None,
        curation_weight: 0,
        sensitivity: Sensitivity {
            level: SensitivityLevel::Normal,
            labels: Vec::new(),
        },
        visibility: Visibility::Private,
        acl: Default::default(),
        tags: a.tags,
        lang: None,
        evidence,
        embedding: None,
    };
    let op = if a.replaces.is_empty() {
        Op::Assert(assert)
    } else {
        Op::Amend(kledger_schemas::AmendOp {
            targets: a.replaces,
            replacement: assert,
        })
    };
    Ok(Intent {
        action_id,
        account_id: account,
        tenant: Tenant {
            tenant_id: p.tenant_id.clone(),
            team_id: p.team_id.clone(),
            project_id: None,
            agent_id: p.agent_id.clone(),
            owner_kind: p.owner_kind,
            owner_id: p.owner_id.clone(),
        },
        source: Source {
            source_id: a.source_id.unwrap_or_else(|| "mcp".into()),
            source_type: a.source_type.unwrap_or_else(|| "agent_tool".into()),
            source_version: a.source_version.unwrap_or_else(|| digest[..16].to_owned()),
            author_id: Some(author),
        },
        extractor: Extractor {
            name: "kledger-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        write_reason: WriteReason::ExplicitRemember,
        planned_against: kledger_schemas::PlannedAgainst {
            head_seq,
            policy: Default::default(),
            targets,
        },
        ops: vec![op],
    })
}

/// The MCP sessions of the `/mcp` endpoint and the principal that opened each: a session is
/// its opener's alone, and every principal holds at most `api.mcp_sessions_per_principal_max`
/// (`api.mcp_sessions_max` in all).
#[derive(Debug)]
pub struct Sessions {
    manager: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    owners: tokio::sync::Mutex<BTreeMap<String, (String, super::api::waits::Share)>>,
    shares: Arc<super::api::waits::Shares>,
}

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

impl Sessions {
    /// Sessions of `manager`, bounded as `config.api` says.
    fn new(
        manager: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
        config: &kledger_runtime::config::ApiConfig,
    ) -> Arc<Self> {
        Arc::new(Self {
            manager,
            owners: tokio::sync::Mutex::default(),
            shares: super::api::waits::Shares::new(
                config.mcp_sessions_per_principal_max,
                config.mcp_sessions_max,
            ),
        })
    }

    /// Forgets the sessions the manager has ended (idle, or closed by their worker).
    async fn forget_ended(&self) {
        let live = self.manager.sessions.read().await;
        let mut owners = self.owners.lock().await;
        owners.retain(|id, _| live.contains_key(id.as_str()));
        metrics::gauge!(kledger_runtime::metrics::MCP_SESSIONS).set(owners.len() as f64);
    }
}

/// The `/mcp` endpoint (Streamable HTTP): requests without a valid bearer token are answered
/// `401` before the MCP layer sees them; a session serves only the principal that opened it.
pub fn router(api: Api) -> axum::Router {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let (for_sessions, tokens) = (api.clone(), tokens());
    let manager = Arc::new(LocalSessionManager::default());
    let sessions = Sessions::new(manager.clone(), &api.config.api);
    let service = StreamableHttpService::new(
        move || Ok(McpServer::http(for_sessions.clone(), tokens.clone())),
        manager,
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |req, next| {
            authorized(api.clone(), sessions.clone(), req, next)
        }))
}

/// The one answer for a session id that is not the caller's: as for an id that never was.
fn no_session() -> axum::response::Response {
    super::api::error_response(
        axum::http::StatusCode::NOT_FOUND,
        "session_not_found",
        "no such session",
    )
}

async fn authorized(
    api: Api,
    sessions: Arc<Sessions>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::{Method, StatusCode};
    let principal = match req.extensions().get::<super::api::Authenticated>() {
        Some(a) => Some(a.0.clone()),
        None => req
            .headers()
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| super::api::principal_of_header(&api, v)),
    };
    let Some(p) = principal else {
        return super::api::error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
        );
    };
    let caller = super::api::waits::caller_key(&p);
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let delete = req.method() == Method::DELETE;
    // A request in a session: the opener's only.
    if let Some(id) = &session {
        let owner = sessions.owners.lock().await.get(id).map(|o| o.0.clone());
        match owner {
            Some(o) if o == caller => {}
            Some(_) => {
                metrics::counter!(kledger_runtime::metrics::MCP_SESSIONS_REFUSED_TOTAL, "reason" => "foreign_session")
                    .increment(1);
                return no_session();
            }
            None => return no_session(),
        }
        let mut res = next.run(req).await;
        // A session's end (`DELETE`) is answered `204`: rmcp answers `202`, which the official
        // Python SDK logs as a failed termination although the session is gone.
        if delete && res.status() == StatusCode::ACCEPTED {
            *res.status_mut() = StatusCode::NO_CONTENT;
        }
        if delete && res.status().is_success() {
            sessions.owners.lock().await.remove(id);
        }
        sessions.forget_ended().await;
        return res;
    }
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    // A request that may open a session (`initialize`): within the caller's share.
    sessions.forget_ended().await;
    let Some(share) = sessions.shares.take(&caller) else {
        metrics::counter!(kledger_runtime::metrics::MCP_SESSIONS_REFUSED_TOTAL, "reason" => "too_many_sessions")
            .increment(1);
        return super::api::error_response(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_sessions",
            "too many MCP sessions are open (this principal's or all of them); end one first",
        );
    };
    let res = next.run(req).await;
    if let Some(id) = res
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        let mut owners = sessions.owners.lock().await;
        owners.insert(id.to_owned(), (caller, share));
        metrics::gauge!(kledger_runtime::metrics::MCP_SESSIONS).set(owners.len() as f64);
    }
    res
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The top-level field names of an object schema.
    fn fields(schema: &serde_json::Value) -> BTreeSet<String> {
        schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn of<T: schemars::JsonSchema>() -> BTreeSet<String> {
        fields(&serde_json::to_value(schemars::schema_for!(T)).unwrap())
    }

    #[test]
    fn the_read_tools_take_the_endpoints_arguments() {
        let router = McpServer::tool_router();
        let tool = |name: &str| {
            let t = router.get(name).unwrap_or_else(|| panic!("no tool {name}"));
            fields(&serde_json::Value::Object((*t.input_schema).clone()))
        };
        let with = |mut s: BTreeSet<String>, id: &str| {
            s.insert(id.to_owned());
            s
        };
        assert!(of::<SearchRequest>().contains("wait_ms"));
        assert_eq!(tool("search_knowledge"), of::<SearchRequest>());
        assert_eq!(tool("get_profile"), of::<ProfileParams>());
        assert_eq!(
            tool("read_playbook"),
            with(of::<ProfileParams>(), "memory_id")
        );
        assert_eq!(
            tool("get_entity_timeline"),
            with(of::<TimelineParams>(), "entity")
        );
        // The agent names the timeline's sources on MCP as on HTTP.
        assert!(tool("get_entity_timeline").contains("sources"));
        assert_eq!(tool("search_conversations"), of::<ConversationQuery>());
    }
}
