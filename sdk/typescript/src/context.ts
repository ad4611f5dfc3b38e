// What every adapter adds to a model's input, and compaction helpers: the
// same words and rules as the Go Stepwise runner and the Python SDK's
// dex_runner.context (a test compares the texts with Stepwise's source).
//
// - summaryNote goes first in the model's input once the session has a
//   context summary (TurnContext.context_summary);
// - planNote goes just before the turn's user message;
// - selectCutoff picks the newest stored message a summary may replace,
//   never splitting a tool call from its result;
// - fitSummaryInput leaves the oldest messages out of a summary call that
//   would not fit its input budget.
//
// Sizes are the contract's estimate: three UTF-8 bytes per token.

import type { Message, Plan, TurnContext } from "./types";

export const summaryNoteHeader = "[Dex] Summary of the earlier conversation:";
export const summaryInstructions =
  "Summarize the conversation so far so that it can go on from your summary alone. " +
  "Keep what the user wants and decided, the facts, names, numbers and identifiers that came up, " +
  "what each tool call did and returned, and what is still open. " +
  "If the conversation starts with an earlier summary, fold it in. " +
  "Write plain text in the conversation's language, with no preamble.";
/** %d is the number of messages left out. */
export const summaryOmissionFormat = "[Dex] %d earlier messages did not fit in this request and are left out.";
/** %d is the revision, %s the status. */
export const planNoteHeader = "[Dex] The current plan (revision %d, %s):";
export const planNoteFooter = "Keep the task statuses current with write_todos.";
export const planningNote =
  "[Dex] Plan mode: do not act yet. Write the plan with write_todos (the only tool you have now); " +
  "the user reviews it and runs it. Ask in text if you need to know more first.";

/** summaryNote is the user-role text that carries a context summary. */
export function summaryNote(text: string): string {
  return summaryNoteHeader + "\n" + text;
}

/** summaryOmission says how many of the oldest messages a summary call left out. */
export function summaryOmission(n: number): string {
  return summaryOmissionFormat.replace("%d", String(n));
}

/** planNote is the note that shows the model the session's plan: a
 * planning turn gets the planning note (with the draft, if any); a cleared
 * or empty plan has none (""). */
export function planNote(turn: Pick<TurnContext, "plan" | "interaction_mode">): string {
  const lines = planLines(turn.plan);
  if (turn.interaction_mode === "planning") {
    return lines ? planningNote + "\n" + lines : planningNote;
  }
  return lines;
}

function planLines(p: Plan | null | undefined): string {
  if (!p || p.status === "cleared" || p.tasks.length === 0) {
    return "";
  }
  const out = [planNoteHeader.replace("%d", String(p.revision)).replace("%s", p.status)];
  p.tasks.forEach((t, i) => out.push(`${i + 1}. [${t.status}] ${t.content}`));
  if (p.status !== "completed") {
    out.push(planNoteFooter);
  }
  return out.join("\n");
}

/** estimateTokens is the contract's estimate: three UTF-8 bytes per token, rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") / 3);
}

/** messageTokens is a stored message's estimate: its framework item, else its text. */
export function messageTokens(m: Message): number {
  return estimateTokens(m.framework_item || m.text);
}

/** cutPoints reports, for each item, whether a summary may end after it:
 * only where every tool call so far has its result. */
export function cutPoints<T>(items: readonly T[], opens: (item: T) => string[], closes: (item: T) => string[]): boolean[] {
  const open = new Set<string>();
  return items.map((it) => {
    opens(it).forEach((id) => open.add(id));
    closes(it).forEach((id) => open.delete(id));
    return open.size === 0;
  });
}

/** selectCutoff is CompactionCutoffResponse.through_sequence: the oldest
 * cut that leaves the newest messages within the retained budget, where
 * every tool call has its result, never the last message; 0 when there is
 * no such point. */
export function selectCutoff(
  messages: readonly Message[],
  retainedTokenBudget: number,
  opens: (m: Message) => string[],
  closes: (m: Message) => string[],
  tokens: (m: Message) => number = messageTokens,
): number {
  if (messages.length < 2) {
    return 0;
  }
  const ok = cutPoints(messages, opens, closes);
  const kept = new Array<number>(messages.length).fill(0);
  for (let i = messages.length - 2; i >= 0; i--) {
    kept[i] = kept[i + 1] + tokens(messages[i + 1]);
  }
  let cut = -1;
  for (let i = 0; i < messages.length - 1; i++) {
    if (!ok[i]) {
      continue;
    }
    cut = i;
    if (kept[i] <= retainedTokenBudget) {
      break;
    }
  }
  return cut >= 0 ? messages[cut].sequence : 0;
}

/** fitSummaryInput leaves the oldest items out of a summary call until
 * size(rest, omitted) fits budget, cutting only where calls keep their
 * results; it returns how many were left out and the rest. A budget of 0
 * means no bound. It throws when even the newest item does not fit. */
export function fitSummaryInput<T>(
  items: readonly T[],
  budget: number,
  size: (rest: readonly T[], omitted: number) => number,
  opens: (item: T) => string[],
  closes: (item: T) => string[],
): [number, readonly T[]] {
  if (budget <= 0 || size(items, 0) <= budget) {
    return [0, items];
  }
  const ok = cutPoints(items, opens, closes);
  for (let i = 0; ; i++) {
    while (i < items.length - 1 && !ok[i]) {
      i++;
    }
    if (i >= items.length - 1) {
      throw new Error("summarize_context: even the newest message does not fit the summary call's input budget");
    }
    const rest = items.slice(i + 1);
    if (size(rest, i + 1) <= budget) {
      return [i + 1, rest];
    }
  }
}
