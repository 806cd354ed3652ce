"""A guarded support agent: may a customer get a refund? Facts come from tools, under a policy.

Read-only tools (profile, billing, policy search) are allowed; ``issue_refund`` exists but is not
on the allowlist, so the model never sees it and cannot run it. Budgets cap the tool calls and the
wall-clock time. Two scripted runs: one gathers facts and answers, one insists on the forbidden
tool and is stopped. Run: python examples/refund_support.py
"""

from langchain_core.tools import tool

from explicit_react import ExplicitReActAgent
from explicit_react.testing import ScriptedChatModel

USERS = {42: {"name": "Anna", "plan": "pro_monthly", "price_usd": 49.0, "days_since_payment": 10}}
POLICIES = {"refund": "Pro monthly plans are refundable within 14 days of the first payment."}


@tool
def get_user_profile(user_id: int) -> str:
    """The customer's name and plan."""
    return (
        f"{USERS[user_id]['name']}, plan {USERS[user_id]['plan']}"  # a KeyError becomes an Error: observation
    )


@tool
def get_user_billing(user_id: int) -> str:
    """The customer's price and the days since their first payment."""
    user = USERS[user_id]
    return f"{user['price_usd']} USD, first payment {user['days_since_payment']} days ago"


@tool
def search_policy(query: str) -> str:
    """Search the refund and billing policies."""
    return next((text for key, text in POLICIES.items() if key in query.lower()), "No matching policy.")


@tool
def issue_refund(user_id: int, amount_usd: float) -> str:
    """Refund money to the customer (needs a human: not allowed for this agent)."""
    return f"Refunded {amount_usd} USD to user {user_id}"


def step(tool_name: str, tool_input: str, thought: str) -> str:
    return f"Thought: {thought}\nAction: {tool_name}\nAction Input: {tool_input}"


FACT_FINDING = [
    step("get_user_profile", '{"user_id": 42}', "Who is the customer and what plan do they have?"),
    step("get_user_billing", '{"user_id": 42}', "When did they first pay?"),
    step("search_policy", "refund policy", "What does the refund policy say?"),
    "Thought: 10 days is within 14 days.\nFinal Answer: Yes, Anna: your pro monthly plan (49 USD, paid "
    "10 days ago) is refundable within 14 days. A colleague will issue the refund.",
]
INSISTS_ON_REFUND = [step("issue_refund", '{"user_id": 42, "amount_usd": 49}', "I just refund it.")] * 2

for title, replies in [("Fact finding", FACT_FINDING), ("Forbidden tool", INSISTS_ON_REFUND)]:
    agent = ExplicitReActAgent(
        ScriptedChatModel(replies),
        [get_user_profile, get_user_billing, search_policy, issue_refund],
        allowed_tools={"get_user_profile", "get_user_billing", "search_policy"},
        max_iterations=6,
        max_tool_calls=4,
        max_seconds=20,
        on_limit="force",
    )
    result = agent.run("Can I get a refund for my subscription right now? I am user 42.")
    print(f"== {title}: stop_reason={result.stop_reason.value} success={result.success}")
    for s in result.steps:
        print(f"   {s.action}({s.action_input}) -> {s.observation}")
    print(f"   Answer: {result.answer}")
