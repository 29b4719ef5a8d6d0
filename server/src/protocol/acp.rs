//! The ACP methods agentls handles and sends.
