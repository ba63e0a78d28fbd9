"""What a headless model writer needs besides the tools: the prompts it renders for a step's review, a retry, a
failure to distill or a rule to judge, and the rule sentence's own check. MCP clients get the same texts from
expand_node and the server's prompts; the agent reaches them here, through the tools layer."""

from adaexplore.memory import NO_GUIDANCE, RuleCandidate, check_rule_text
from adaexplore.prompts import (
    DistillContext,
    JudgeRuleContext,
    KernelContext,
    RetryContext,
    ReviewContext,
    render_answer_format,
    render_distill_rule,
    render_judge_rule,
    render_retry,
    render_review,
    render_step_extras,
)

__all__ = [
    "NO_GUIDANCE",
    "DistillContext",
    "JudgeRuleContext",
    "KernelContext",
    "RetryContext",
    "ReviewContext",
    "RuleCandidate",
    "check_rule_text",
    "render_answer_format",
    "render_distill_rule",
    "render_judge_rule",
    "render_retry",
    "render_review",
    "render_step_extras",
]
