//! The ACP methods agentls handles and sends, one type each (name and params; results are
//! built as JSON by `agentls_core::acp`, whose shapes the ACP tier checks against the
//! official schema). The wire is ACP's (protocol version 1): these types name it, they do
//! not change it. `acp/methods.rs` dispatches on the handled ones; `acp/host.rs` sends the
//! others with `Connection::request::<R>` / `notify::<N>`.
//!
//! Params list the fields agentls reads, with ACP's names; unknown fields are ignored, as
//! ACP's `_meta` and newer fields must be.

use std::path::PathBuf;

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use serde::Deserialize;
use serde_json::Value;

use super::shapes::SessionIdParams;
use super::{ClientNotification, ClientRequest};

// ---- client → agent ----

pub enum Initialize {}

impl ClientRequest for Initialize {
    type Params = InitializeParams;
    type Result = Value;
    const METHOD: &'static str = "initialize";
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: u16,
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    #[serde(default)]
    pub fs: FsCapabilities,
    #[serde(default)]
    pub terminal: bool,
    /// `{compaction?: {}}`: what the client takes of the session's updates.
    #[serde(default)]
    pub session: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FsCapabilities {
    #[serde(default)]
    pub read_text_file: bool,
    #[serde(default)]
    pub write_text_file: bool,
}

pub enum Authenticate {}

impl ClientRequest for Authenticate {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "authenticate";
}

pub enum NewSession {}

impl ClientRequest for NewSession {
    type Params = NewSessionParams;
    type Result = Value;
    const METHOD: &'static str = "session/new";
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    pub cwd: PathBuf,
    pub mcp_servers: Vec<Value>,
    /// More workspace roots, absolute (`sessionCapabilities.additionalDirectories`).
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
}

pub enum LoadSession {}

impl ClientRequest for LoadSession {
    type Params = LoadSessionParams;
    type Result = Value;
    const METHOD: &'static str = "session/load";
}

/// `session/load` and `session/resume`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionParams {
    pub session_id: String,
    pub cwd: PathBuf,
    /// Absent (allowed for `session/resume`): the servers already given stay.
    #[serde(default)]
    pub mcp_servers: Option<Vec<Value>>,
    /// More workspace roots, absolute; absent: those given before stay.
    #[serde(default)]
    pub additional_directories: Option<Vec<PathBuf>>,
}

pub enum ResumeSession {}

impl ClientRequest for ResumeSession {
    type Params = LoadSessionParams;
    type Result = Value;
    const METHOD: &'static str = "session/resume";
}

pub enum ForkSession {}

impl ClientRequest for ForkSession {
    type Params = ForkSessionParams;
    type Result = Value;
    const METHOD: &'static str = "session/fork";
}

/// `session/fork` (unstable in ACP): a new session with the history of `sessionId`; agentls
/// also reads `checkpointId` (its history then ends before that checkpoint's message).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionParams {
    pub session_id: String,
    pub cwd: PathBuf,
    #[serde(default)]
    pub mcp_servers: Option<Vec<Value>>,
    #[serde(default)]
    pub checkpoint_id: Option<String>,
}

pub enum ListSessions {}

impl ClientRequest for ListSessions {
    type Params = ListSessionsParams;
    type Result = Value;
    const METHOD: &'static str = "session/list";
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsParams {
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

pub enum Prompt {}

impl ClientRequest for Prompt {
    type Params = PromptParams;
    type Result = Value;
    const METHOD: &'static str = "session/prompt";
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    pub session_id: String,
    pub prompt: Vec<agentls_core::acp::ContentBlock>,
}

pub enum CloseSession {}

impl ClientRequest for CloseSession {
    /// `{sessionId}`: its turn is cancelled, its memory, MCP servers and background
    /// commands freed; its log stays.
    type Params = SessionIdParams;
    type Result = Value;
    const METHOD: &'static str = "session/close";
}

pub enum DeleteSession {}

impl ClientRequest for DeleteSession {
    /// `{sessionId}`: closed, its log and checkpoints removed; an unknown id succeeds.
    type Params = SessionIdParams;
    type Result = Value;
    const METHOD: &'static str = "session/delete";
}

pub enum SetMode {}

impl ClientRequest for SetMode {
    type Params = SetModeParams;
    type Result = Value;
    const METHOD: &'static str = "session/set_mode";
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams {
    pub session_id: String,
    /// One of `agentls_core::acp::MODES` (the LSP mode's `agent/session/setMode` names).
    pub mode_id: String,
}

pub enum SetConfigOption {}

impl ClientRequest for SetConfigOption {
    type Params = SetConfigOptionParams;
    type Result = Value;
    const METHOD: &'static str = "session/set_config_option";
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionParams {
    pub session_id: String,
    pub config_id: String,
    pub value: Value,
}

pub enum Cancel {}

impl ClientNotification for Cancel {
    /// The same params as the LSP mode's `agent/session/cancel`.
    type Params = SessionIdParams;
    const METHOD: &'static str = "session/cancel";
}

pub enum CancelRequest {}

impl ClientNotification for CancelRequest {
    /// `{requestId}`: the client withdraws its request (handled by the transport, which
    /// also sends it for agentls's own requests it stops waiting for).
    type Params = CancelRequestParams;
    const METHOD: &'static str = "$/cancel_request";
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequestParams {
    pub request_id: Value,
}

// ---- agent → client (params built by `agentls_core::acp`) ----

pub enum SessionUpdate {}

impl Notification for SessionUpdate {
    type Params = Value;
    const METHOD: &'static str = "session/update";
}

pub enum RequestPermission {}

impl Request for RequestPermission {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "session/request_permission";
}

pub enum ReadTextFile {}

impl Request for ReadTextFile {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "fs/read_text_file";
}

pub enum WriteTextFile {}

impl Request for WriteTextFile {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "fs/write_text_file";
}

pub enum CreateTerminal {}

impl Request for CreateTerminal {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "terminal/create";
}

pub enum WaitForTerminalExit {}

impl Request for WaitForTerminalExit {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "terminal/wait_for_exit";
}

pub enum KillTerminal {}

impl Request for KillTerminal {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "terminal/kill";
}

pub enum TerminalOutput {}

impl Request for TerminalOutput {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "terminal/output";
}

pub enum ReleaseTerminal {}

impl Request for ReleaseTerminal {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "terminal/release";
}
