// Package model holds the Stepwise model clients of real providers, all
// built on the official SDKs (openai-go/v3 and anthropic-sdk-go/v2):
//
//   - "openai": the OpenAI Responses API, with store=false and
//     include=["reasoning.encrypted_content"], so no conversation state
//     lives at OpenAI and encrypted reasoning replays on the next call;
//   - "openai-chat": OpenAI Chat Completions;
//   - "openai-compatible": Chat Completions at api_base (required): Ollama,
//     vLLM, a LiteLLM proxy, OpenRouter, Gemini's OpenAI endpoint...;
//   - "anthropic": the Anthropic Messages API, with extended thinking when
//     settings.thinking_budget asks for it (or settings.reasoning_effort:
//     minimal/low 1024, medium 2048, high 4096, xhigh/max 8192 tokens).
//
// "scripted" is not built here: a scripted client is a function of the
// request, written in Go (stepwise.NewScriptedModelClient), so New refuses it.
//
// Every client makes exactly one streamed request per CallModel with the
// SDK's retries off (the RunModel Step retries), sends the whole input every
// time, streams text and reasoning (summaries or thinking) to the output in
// batches of at most ~50 ms or one sentence, assembles tool calls from their
// deltas, and reports usage (input, output, cached input and reasoning
// tokens) and ModelCallMetadata.
//
// # Provider-exact items
//
// Each response is stored as a stepwise.ModelOutputItem whose Items are the
// provider's own JSON text, one entry per output item:
//
//	provider "openai", api "responses":        each Responses output item (message, reasoning with encrypted_content, function_call)
//	provider "openai", api "chat_completions": the assistant message (content, tool_calls, reasoning_content when the server sends it)
//	provider "anthropic", api "messages":      each content block (text, thinking with signature, redacted_thinking, tool_use)
//	provider "openai-compatible:<host[:port]>", api "chat_completions": as for openai-chat
//
// Items replay unchanged to the same provider and API: a Responses item is
// sent back as its exact JSON text, and an Anthropic thinking or
// redacted_thinking block too (the SDK's ToParam for the other blocks), so
// encrypted reasoning, signatures and redacted thinking reach the provider
// byte for byte. An item from any other provider or API (a scripted model,
// another provider after the agent's model was switched) replays as its Text
// and ToolCalls, and its reasoning is dropped. User text and tool results are
// provider-neutral (stepwise.ItemUserText, stepwise.ItemToolResult).
//
// An openai-compatible item names its server (the host of api_base) as its
// provider: compatible servers add fields of their own (reasoning_content,
// reasoning_details, thought signatures) that only that server understands,
// so they replay unchanged only to it; any other server gets the neutral
// form, which every Chat Completions server accepts.
//
// # Errors
//
// HTTP 400, 401, 403, 404 and 422 fail with pluginapi.Permanent (the RunModel
// Step fails at once, with a message naming the provider, the API and the
// status, and "context length exceeded" when the provider says so). 408, 409,
// 429 and 5xx, timeouts, connection errors and streams that end early are
// plain errors, which the Step retries. The API key never appears in an
// error, a log, an event or a stored item.
package model
