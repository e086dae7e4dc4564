"""A corpus of requests a person would type to operate the demo cluster.

Each case is a conversation against a freshly seeded `demo` cluster; only its
LAST message is checked: the calls of each round (rounds separated by ` ; `,
calls within a round by ` + `, a call written `tool [name] [key=value]`, a
create's `command=` taking the rest of the call), and facts the answer must
contain (`absent` ones it must not). `plan=""` means no tool call at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.provider.talk import Declining

README_PROMPTS = (
    "list my sandboxes",
    "why is gpu-trainer failing? show its logs",
    "create a sandbox named scratch running echo hello",
    "delete py-worker",
    "list the providers and inference routes",
)
"""The prompts README.md and the demo banner suggest (checked against both in test_phrasings)."""

ALL_THREE = ("dev-box", "gpu-trainer", "py-worker")
WHY_GPU = ("gpu-trainer", "ImagePullBackOff")
GPU = "sandbox_get gpu-trainer + sandbox_logs gpu-trainer"


@dataclass(frozen=True, slots=True)
class Case:
    turns: tuple[str, ...]
    plan: str
    facts: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    declining: Declining = "no"

    @property
    def id(self) -> str:
        return " / ".join(self.turns)[:80]


def c(
    turns: str | tuple[str, ...],
    plan: str,
    *facts: str,
    absent: tuple[str, ...] = (),
    declining: Declining = "no",
) -> Case:
    return Case((turns,) if isinstance(turns, str) else turns, plan, facts, absent, declining)


LISTED = "list my sandboxes"

SINGLE_TOOL = [
    c("list my sandboxes", "sandbox_list", *ALL_THREE),
    c("List my sandboxes.", "sandbox_list", *ALL_THREE),
    c("SANDBOX LIST", "sandbox_list", *ALL_THREE),
    c("show me all my sandboxes", "sandbox_list", *ALL_THREE),
    c("what sandboxes do I have?", "sandbox_list", *ALL_THREE),
    c("Which sandboxes are there?", "sandbox_list", *ALL_THREE),
    c("how many sandboxes do I have?", "sandbox_list", "3 sandboxes"),
    c("ls", "sandbox_list", *ALL_THREE),
    c("sandboxes?", "sandbox_list", *ALL_THREE),
    c("could you please list the sandboxes for me?", "sandbox_list", *ALL_THREE),
    c("give me an overview of my sandboxes", "sandbox_list", *ALL_THREE),
    c("what's running on the cluster?", "sandbox_list", *ALL_THREE),
    c("I want to see my sandboxes", "sandbox_list", *ALL_THREE),
    c("list sandboxes please, thanks", "sandbox_list", *ALL_THREE),
    c("is the cluster up?", "cluster_status", "Connected"),
    c("Is my cluster healthy?", "cluster_status", "Connected"),
    c("what version is the server running?", "cluster_status", "0.1.0"),
    c("are we connected to the gateway?", "cluster_status", "Connected"),
    c("cluster status", "cluster_status", "Connected"),
    c("check the cluster health please", "cluster_status", "Connected"),
    c("is the server alive?", "cluster_status", "Connected"),
    c("what's the status of the cluster?", "cluster_status", "Connected"),
    c("status", "cluster_status", "Connected"),
    c("show me dev-box", "sandbox_get dev-box", "dev-box", "Ready"),
    c("describe py-worker please", "sandbox_get py-worker", "Provisioning"),
    c("details of gpu-trainer", "sandbox_get gpu-trainer", "Error"),
    c("is py-worker ready yet?", "sandbox_get py-worker", "No, py-worker is not Ready yet"),
    c("is dev-box ready?", "sandbox_get dev-box", "Yes, dev-box is Ready"),
    c("what's the phase of gpu-trainer", "sandbox_get gpu-trainer", "Error"),
    c("get sandbox dev-box", "sandbox_get dev-box", "Ready"),
    c("tell me about dev-box", "sandbox_get dev-box", "Ready"),
    c('inspect "py-worker"', "sandbox_get py-worker", "py-worker"),
    c("what policy does dev-box have?", "sandbox_get dev-box", "github"),
    c("status of py-worker", "sandbox_get py-worker", "Provisioning"),
    c("is dev-box up?", "sandbox_get dev-box", "Ready"),
    c("dev-box status", "sandbox_get dev-box", "Ready"),
    c("py-worker?", "sandbox_get py-worker", "Provisioning"),
    c("show the logs of dev-box", "sandbox_logs dev-box", "log lines"),
    c("show me py-worker's logs", "sandbox_logs py-worker", "py-worker"),
    c("logs for gpu-trainer", "sandbox_logs gpu-trainer", "ImagePullBackOff"),
    c("Show me the logs for gpu-trainer, please.", "sandbox_logs gpu-trainer", "ImagePullBackOff"),
    c("gpu-trainer logs", "sandbox_logs gpu-trainer", "ImagePullBackOff"),
    c("tail the logs of dev-box", "sandbox_logs dev-box", "dev-box"),
    c("show the last 5 lines of dev-box", "sandbox_logs dev-box lines=5", "5 log lines"),
    c(
        "give me the last 20 log lines of py-worker",
        "sandbox_logs py-worker lines=20",
        "py-worker",
    ),
    c("what did dev-box print?", "sandbox_logs dev-box", "dev-box"),
    c("dev-box logs -n 3", "sandbox_logs dev-box lines=3", "3 log lines"),
    c("can you fetch the output of gpu-trainer?", "sandbox_logs gpu-trainer", "ImagePullBackOff"),
    c("delete py-worker", "sandbox_delete py-worker", "Deleted sandbox py-worker"),
    c("get rid of py-worker", "sandbox_delete py-worker", "Deleted sandbox py-worker"),
    c("please remove dev-box", "sandbox_delete dev-box", "Deleted sandbox dev-box"),
    c("tear down gpu-trainer", "sandbox_delete gpu-trainer", "Deleted sandbox gpu-trainer"),
    c("kill py-worker", "sandbox_delete py-worker", "Deleted sandbox py-worker"),
    c("destroy the sandbox called dev-box", "sandbox_delete dev-box", "Deleted sandbox dev-box"),
    c("nuke gpu-trainer", "sandbox_delete gpu-trainer", "Deleted sandbox gpu-trainer"),
    c("Delete sandbox 'py-worker'.", "sandbox_delete py-worker", "Deleted sandbox py-worker"),
    c(
        "could you delete the sandbox named py-worker for me",
        "sandbox_delete py-worker",
        "Deleted sandbox py-worker",
    ),
    c("delete scratch-9", "sandbox_delete scratch-9", "scratch-9", "not found"),
    c(
        "create a sandbox named scratch running echo hello",
        "sandbox_create name=scratch command=echo hello",
        "Created sandbox scratch",
        "hello",
    ),
    c("spin up a sandbox called web-3", "sandbox_create name=web-3", "Created sandbox web-3"),
    c("make me a new sandbox", "sandbox_create", "Created sandbox"),
    c(
        "create a sandbox named web with image nginx:1.27",
        "sandbox_create name=web image=nginx:1.27",
        "Created sandbox web",
    ),
    c(
        "Could you create a sandbox called build-1, please?",
        "sandbox_create name=build-1",
        "Created sandbox build-1",
    ),
    c(
        "set up a sandbox named ci-runner running echo ready",
        "sandbox_create name=ci-runner command=echo ready",
        "ci-runner",
        "ready",
    ),
    c(
        "launch a new box named job-7 running echo 42",
        "sandbox_create name=job-7 command=echo 42",
        "job-7",
        "42",
    ),
    c(
        "create a sandbox called job-1 and run echo hi, there",
        "sandbox_create name=job-1 command=echo hi, there",
        "job-1",
        "hi, there",
    ),
    c("list the providers", "provider_list", "anthropic", "gh", "nvidia"),
    c("what providers do I have?", "provider_list", "anthropic", "gh", "nvidia"),
    c("which credentials are configured?", "provider_list", "anthropic"),
    c("show me the nvidia provider", "provider_get nvidia", "NVIDIA_BASE_URL"),
    c("show provider anthropic", "provider_get anthropic", "claude"),
    c("what type is the gh provider?", "provider_get gh", "github"),
    c("details of the provider gh", "provider_get gh", "github"),
    c("which inference routes are configured?", "inference_route_list", "qwzmke"),
    c("list the inference routes", "inference_route_list", "qwzmke", "claude-route"),
    c("what models can my sandboxes use?", "inference_route_list", "claude-sonnet-4-5"),
    c("show me the routes", "inference_route_list", "vllm-local"),
    c("which LLMs are available?", "inference_route_list", "qwzmke"),
]

DIAGNOSIS = [
    c("why is gpu-trainer failing? show its logs", GPU, *WHY_GPU, "failing"),
    c("why is gpu-trainer failing?", GPU, *WHY_GPU),
    c("what's wrong with gpu-trainer", GPU, *WHY_GPU),
    c("whats wrong with gpu-trainer?", GPU, *WHY_GPU),
    c("gpu-trainer is broken, why?", GPU, *WHY_GPU),
    c("debug gpu-trainer", GPU, *WHY_GPU),
    c("is there a problem with gpu-trainer?", GPU, *WHY_GPU),
    c("gpu-trainer keeps crashing, can you investigate?", GPU, *WHY_GPU),
    c("show me the errors of gpu-trainer", GPU, *WHY_GPU),
    c("what happened to gpu-trainer?", GPU, *WHY_GPU),
    c("Why Is GPU-Trainer Failing?", GPU, *WHY_GPU),
    c("which sandbox is failing and why?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("which sandbox is failing?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("is anything broken?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("what's wrong?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("are any of my sandboxes failing?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("troubleshoot the failing sandbox", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c(
        "list my sandboxes, then show the logs of the failing one",
        "sandbox_list ; sandbox_logs gpu-trainer",
        *WHY_GPU,
    ),
    c(
        "list my sandboxes and show the logs of the first one",
        "sandbox_list ; sandbox_logs dev-box",
        "dev-box",
        "3 sandboxes",
    ),
    c(
        "why is dev-box failing?",
        "sandbox_get dev-box + sandbox_logs dev-box",
        "dev-box is not failing",
        "pypi.org",
    ),
    c(
        "why isn't py-worker ready?",
        "sandbox_get py-worker + sandbox_logs py-worker",
        "Provisioning",
    ),
]

MULTI_STEP = [
    c(
        "create a sandbox named web-2 running echo hi and show its logs",
        "sandbox_create name=web-2 command=echo hi ; sandbox_logs web-2",
        "web-2",
        "log lines",
    ),
    c(
        "create a sandbox named tmp-1 and show its logs",
        "sandbox_create name=tmp-1 ; sandbox_logs tmp-1",
        "tmp-1",
    ),
    c(
        "spin up a box called api-1, then show me its details",
        "sandbox_create name=api-1 ; sandbox_get api-1",
        "api-1",
        "Ready",
    ),
    c(
        "list my sandboxes and check the cluster health; also list providers",
        "sandbox_list + cluster_status + provider_list",
        "Connected",
        "nvidia",
    ),
    c(
        "list the providers and inference routes",
        "provider_list + inference_route_list",
        "anthropic",
        "qwzmke",
    ),
    c(
        "delete py-worker and list my sandboxes",
        "sandbox_delete py-worker ; sandbox_list",
        "Deleted sandbox py-worker",
    ),
    c(
        "delete dev-box and py-worker",
        "sandbox_delete dev-box + sandbox_delete py-worker",
        "Deleted sandbox dev-box",
        "Deleted sandbox py-worker",
    ),
    c(
        "show the logs of dev-box and py-worker",
        "sandbox_logs dev-box + sandbox_logs py-worker",
        "dev-box",
        "py-worker",
    ),
    c("show dev-box and its logs", "sandbox_get dev-box + sandbox_logs dev-box", "Ready"),
    c(
        "is the cluster up and what sandboxes do I have?",
        "cluster_status + sandbox_list",
        "Connected",
        *ALL_THREE,
    ),
    c(
        "list my sandboxes, then delete the last one",
        "sandbox_list ; sandbox_delete py-worker",
        "Deleted sandbox py-worker",
    ),
    c(
        "list my sandboxes and describe the second one",
        "sandbox_list ; sandbox_get gpu-trainer",
        "Error",
    ),
    c(
        "create a sandbox named web-9, then delete it",
        "sandbox_create name=web-9 ; sandbox_delete web-9",
        "Deleted sandbox web-9",
    ),
    c("show me the newest sandbox", "sandbox_list ; sandbox_get py-worker", "py-worker"),
    c("show the logs of the oldest sandbox", "sandbox_list ; sandbox_logs dev-box", "dev-box"),
    c("show me the provisioning one", "sandbox_list ; sandbox_get py-worker", "Provisioning"),
    c(
        "describe all my sandboxes",
        "sandbox_list ; sandbox_get dev-box + sandbox_get gpu-trainer + sandbox_get py-worker",
        *ALL_THREE,
    ),
    c(
        "delete all my sandboxes",
        "sandbox_list ; sandbox_delete dev-box + sandbox_delete gpu-trainer"
        " + sandbox_delete py-worker",
        "Deleted sandbox gpu-trainer",
    ),
    c(
        "show the logs of all my sandboxes",
        "sandbox_list ; sandbox_logs dev-box + sandbox_logs gpu-trainer + sandbox_logs py-worker",
        "ImagePullBackOff",
    ),
    c(
        "create a sandbox and show its logs",
        "sandbox_create ; sandbox_logs sandbox-33d5b01d-1f87-4091-9a7a-ce7c20feb1ae",
        "Created sandbox",
        "log lines",
    ),
]

FOLLOW_UPS = [
    c(("show me dev-box", "show its logs"), "sandbox_logs dev-box", "dev-box"),
    c(("show me dev-box", "delete it"), "sandbox_delete dev-box", "Deleted sandbox dev-box"),
    c((LISTED, "show me the second one"), "sandbox_get gpu-trainer", "Error"),
    c((LISTED, "delete the last one"), "sandbox_delete py-worker", "Deleted sandbox py-worker"),
    c((LISTED, "logs of the first sandbox"), "sandbox_logs dev-box", "dev-box"),
    c(
        (LISTED, "delete them"),
        "sandbox_delete dev-box + sandbox_delete gpu-trainer + sandbox_delete py-worker",
        "Deleted sandbox dev-box",
    ),
    c((LISTED, "what's wrong with the failing one?"), "sandbox_logs gpu-trainer", *WHY_GPU),
    c((LISTED, "why is it failing?"), "sandbox_logs gpu-trainer", *WHY_GPU),
    c(("which sandbox is failing?", "delete it"), "sandbox_delete gpu-trainer", "gpu-trainer"),
    c(("which sandbox is failing?", "show me its details"), "sandbox_get gpu-trainer", "Error"),
    c(
        ("create a sandbox named web-2", "show me the logs of the new one"),
        "sandbox_logs web-2",
        "web-2",
    ),
    c(("create a sandbox named web-2", "now delete it"), "sandbox_delete web-2", "web-2"),
    c(("show the logs of gpu-trainer", "and py-worker?"), "sandbox_logs py-worker", "py-worker"),
    c(("show me dev-box", "what about py-worker?"), "sandbox_get py-worker", "Provisioning"),
    c(
        (LISTED, "show me gpu-trainer", "delete that one"),
        "sandbox_delete gpu-trainer",
        "Deleted sandbox gpu-trainer",
    ),
    c(
        ("show dev-box", "show py-worker", "delete both"),
        "sandbox_delete dev-box + sandbox_delete py-worker",
        "py-worker",
    ),
    c((LISTED, "show the provisioning one"), "sandbox_get py-worker", "Provisioning"),
    c((LISTED, "show the logs of the third one"), "sandbox_logs py-worker", "py-worker"),
    c((LISTED, "show me the fifth one"), "", "only 3 sandboxes"),
    c(("delete py-worker", LISTED), "sandbox_list", "dev-box", "gpu-trainer"),
    c(
        ("create a sandbox named scratch running echo hello", "what did it print?"),
        "sandbox_logs scratch",
        "scratch",
    ),
    c(("show me the nvidia provider", "and gh?"), "provider_get gh", "github"),
    c(("why is gpu-trainer failing?", "delete it"), "sandbox_delete gpu-trainer", "gpu-trainer"),
    c((LISTED, "is the newest one ready?"), "sandbox_get py-worker", "Provisioning"),
    c(("show dev-box", "its logs please"), "sandbox_logs dev-box", "dev-box"),
    c(("is the cluster up?", "and my sandboxes?"), "sandbox_list", *ALL_THREE),
    c(("list my sandboxes", "Show me gpu-trainer's logs."), "sandbox_logs gpu-trainer", *WHY_GPU),
]

CONVERSATION = [
    c("what did you just say?", "", "not said anything"),
    c((LISTED, "what did you just say?"), "", "You have 3 sandboxes"),
    c(("is the cluster up?", "thanks!"), "", "welcome"),
    c("thanks", "", "welcome"),
    c("thank you so much", "", "welcome"),
    c("who are you", "", "simulated model"),
    c("Who are you?", "", "simulated model"),
    c("what can you do?", "", "list"),
    c("help", "", "list my sandboxes"),
    c("hello", "", "Hello"),
    c("hi there", "", "Hello"),
    c((LISTED, "cheers"), "", "welcome"),
]

NOT_UNDERSTOOD = [
    c("tell me a joke", "", "did not understand", "list my sandboxes"),
    c("asdf qwerty", "", "did not understand"),
    c("what's the weather like today?", "", "did not understand"),
    c("banana", "", "did not understand"),
    c((LISTED, "sing me a song"), "", "did not understand", "why is gpu-trainer failing?"),
    c("🙂", "", "did not understand"),
    c("what is the meaning of life", "", "did not understand"),
]

QUESTIONS = [
    c("delete it", "", "Which sandbox do you mean?"),
    c("show its logs", "", "Which sandbox do you mean?"),
    c((LISTED, "delete it"), "", "Which sandbox do you mean?", *ALL_THREE),
]

DECLINED = [
    c(
        "delete py-worker",
        "sandbox_delete py-worker",
        "declined",
        "--yes",
        absent=("Deleted sandbox",),
        declining="no-one-to-ask",
    ),
    c(
        "create a sandbox named s2",
        "sandbox_create name=s2",
        "declined",
        absent=("Created sandbox",),
        declining="no-one-to-ask",
    ),
    c(
        "create a sandbox named s2",
        "sandbox_create name=s2",
        "You declined",
        absent=("Created sandbox",),
        declining="answered-no",
    ),
    c(
        "delete dev-box",
        "sandbox_delete dev-box",
        "You declined",
        absent=("Deleted sandbox",),
        declining="answered-no",
    ),
    c(
        "create a sandbox named web-2 running echo hi and show its logs",
        "sandbox_create name=web-2 command=echo hi",
        "declined",
        "did not read its logs",
        absent=("Created sandbox",),
        declining="no-one-to-ask",
    ),
    c(
        "delete py-worker and list my sandboxes",
        "sandbox_delete py-worker ; sandbox_list",
        "declined",
        "py-worker (Provisioning)",
        declining="answered-no",
    ),
]

EXPLORED = [  # phrasings found by trying the demo as a new user would
    c("hey, can you show me what sandboxes exist?", "sandbox_list", *ALL_THREE),
    c("what's the state of my sandboxes", "sandbox_list", *ALL_THREE),
    c("any sandboxes in error?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("can u list sandboxs pls", "sandbox_list", *ALL_THREE),
    c(
        "py-worker is stuck, what's going on?",
        "sandbox_get py-worker + sandbox_logs py-worker",
        "not Ready yet",
    ),
    c("How is dev-box doing?", "sandbox_get dev-box", "Ready"),
    c(
        "I need a new sandbox called data-prep that runs python3 --version",
        "sandbox_create name=data-prep command=python3 --version",
        "data-prep",
        "Python 3",
    ),
    c("create web-4 running echo ok", "sandbox_create name=web-4 command=echo ok", "web-4"),
    c(
        "create two sandboxes named a-1 and a-2",
        "sandbox_create name=a-1 + sandbox_create name=a-2",
        "Created sandbox a-1",
        "Created sandbox a-2",
    ),
    c(
        "create a sandbox named x1 from image python:3.12 that runs python3 -c \"print('hi')\"",
        "sandbox_create name=x1 image=python:3.12 command=python3 -c \"print('hi')\"",
        "x1",
    ),
    c(
        "remove the broken sandbox",
        "sandbox_list ; sandbox_delete gpu-trainer",
        "gpu-trainer is the failing sandbox",
        "Deleted sandbox gpu-trainer",
    ),
    c(
        "delete the sandbox that is failing",
        "sandbox_list ; sandbox_delete gpu-trainer",
        "Deleted sandbox gpu-trainer",
    ),
    c(
        "show the logs of every sandbox",
        "sandbox_list ; sandbox_logs dev-box + sandbox_logs gpu-trainer + sandbox_logs py-worker",
        "ImagePullBackOff",
    ),
    c("which providers are set up", "provider_list", "anthropic"),
    c("what's the gh provider", "provider_get gh", "GITHUB_TOKEN"),
    c("which model does the agent use?", "inference_route_list", "nvidia/nemotron-3-nano-30b-a3b"),
    c("is the gateway reachable?", "cluster_status", "Connected"),
    c((LISTED, "which one is broken?"), "sandbox_logs gpu-trainer", *WHY_GPU),
    c((LISTED, "delete the provisioning one"), "sandbox_delete py-worker", "py-worker"),
    c(
        ("create a sandbox named web-2", LISTED, "delete the newest one"),
        "sandbox_delete web-2",
        "Deleted sandbox web-2",
    ),
    c(("create a sandbox named web-2", "is it ready?"), "sandbox_get web-2", "Ready"),
    c(("why is gpu-trainer failing?", "how do I fix it?"), "sandbox_logs gpu-trainer", *WHY_GPU),
    c("what's your name?", "", "simulated model"),
    c("how do I create a sandbox?", "", "create a sandbox named", "confirmation"),
    c("what does delete do?", "", "for example", "confirmation"),
    c("how can I see the logs?", "", "show the logs of"),
    c("can you delete stuff?", "", "Which sandbox do you mean?"),
    c("is anything running?", "sandbox_list", *ALL_THREE),
    c("what went wrong?", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("I don't need gpu-trainer anymore, remove it", "sandbox_delete gpu-trainer", "gpu-trainer"),
    c((LISTED, "what about the second?"), "sandbox_get gpu-trainer", "Error"),
    c((LISTED, "and the logs of the last?"), "sandbox_logs py-worker", "py-worker"),
    c(("show providers", "tell me more about nvidia"), "provider_get nvidia", "NVIDIA_API_KEY"),
    c(("is py-worker ready now?", "and now?"), "sandbox_get py-worker", "Provisioning"),
    c((LISTED, "again"), "sandbox_list", *ALL_THREE),
    c(("show dev-box", "py-worker, please"), "sandbox_get py-worker", "Provisioning"),
    c("good morning!", "", "Hello"),
]

# Issue 31: conversation classes, each a property of the grammar (several phrasings,
# negated and multi-turn forms).

COORDINATION = [  # a second object joined to the first gets the same tool
    c(
        "get me dev-box, and py-worker as well",
        "sandbox_get dev-box + sandbox_get py-worker",
        "Ready",
        "Provisioning",
    ),
    c(
        "logs for dev-box plus the same for gpu-trainer",
        "sandbox_logs dev-box + sandbox_logs gpu-trainer",
        "ImagePullBackOff",
    ),
    c(
        "describe dev-box as well as py-worker",
        "sandbox_get dev-box + sandbox_get py-worker",
        "Provisioning",
    ),
    c(
        "show me the logs of py-worker, and gpu-trainer too",
        "sandbox_logs py-worker + sandbox_logs gpu-trainer",
        "ImagePullBackOff",
    ),
    c(
        "details on gpu-trainer along with dev-box",
        "sandbox_get gpu-trainer + sandbox_get dev-box",
        "Error",
        "Ready",
    ),
    c(
        "delete py-worker and also gpu-trainer",
        "sandbox_delete py-worker + sandbox_delete gpu-trainer",
        "Deleted sandbox py-worker",
        "Deleted sandbox gpu-trainer",
    ),
    c(
        "show dev-box but don't delete py-worker as well",
        "sandbox_get dev-box",
        "Ready",
        absent=("Deleted sandbox",),
    ),
]

SELECT_THEN_ACT = [  # the target named by a property of a listing's rows
    c(
        "show the logs of whichever one is failing",
        "sandbox_list ; sandbox_logs gpu-trainer",
        *WHY_GPU,
    ),
    c(
        "describe the one still provisioning",
        "sandbox_list ; sandbox_get py-worker",
        "Provisioning",
    ),
    c(
        "get details on whichever sandbox is ready",
        "sandbox_list ; sandbox_get dev-box",
        "Ready",
    ),
    c(
        "tail the logs of the sandbox that's currently erroring",
        "sandbox_list ; sandbox_logs gpu-trainer",
        "ImagePullBackOff",
    ),
    c(
        "inspect whatever box is in provisioning",
        "sandbox_list ; sandbox_get py-worker",
        "Provisioning",
    ),
    c(
        "show me whichever one is deleting",
        "sandbox_list",
        "None of your sandboxes is Deleting",
    ),
    c(
        "don't delete whichever one is failing, just show it",
        "sandbox_list ; sandbox_logs gpu-trainer + sandbox_get gpu-trainer",
        "Error",
        absent=("Deleted sandbox",),
    ),
    c((LISTED, "logs of whichever one is provisioning"), "sandbox_logs py-worker", "py-worker"),
]

DOMAIN_QUALIFIERS = [  # the noun naming the domain decides, even in a casual frame
    c("on the sandbox front, what's running?", "sandbox_list", *ALL_THREE),
    c("on the sandbox front, what's up?", "sandbox_list", *ALL_THREE),
    c("provider-wise, what have we got?", "provider_list", "anthropic"),
    c("sandbox-wise, how are we doing in this cluster?", "sandbox_list", *ALL_THREE),
    c("as for providers in the cluster, what's there?", "provider_list", "anthropic"),
    c("route-wise, what's configured?", "inference_route_list", "nvidia/nemotron-3-nano-30b-a3b"),
    c("in terms of sandboxes, what's the status?", "sandbox_list", *ALL_THREE),
    c("what's the cluster got, provider-wise?", "provider_list", "anthropic"),
    c("when it comes to routes, what do we have?", "inference_route_list", "nvidia"),
    c("cluster-wise, are we up?", "cluster_status", "Connected"),
]

WHAT_REMAINS = [  # after deletions or creations, "what's left" lists again
    c(("delete py-worker", "what's still there now?"), "sandbox_list", "dev-box", "gpu-trainer"),
    c(
        ("create a sandbox named t-1", "anything remaining after that?"),
        "sandbox_list",
        "t-1",
        "dev-box",
    ),
    c(("delete dev-box", "what's left?"), "sandbox_list", "gpu-trainer", "dev-box (Deleting)"),
    c(("delete gpu-trainer", "which ones survived?"), "sandbox_list", "dev-box"),
    c(("delete py-worker", "what do we have left"), "sandbox_list", "gpu-trainer"),
    c(
        ("delete py-worker", "don't delete anything else, what remains?"),
        "sandbox_list",
        "dev-box",
        absent=("Deleted sandbox",),
    ),
]

ABOUT_THE_CONVERSATION = [  # answered from the conversation's own turns, no tool call
    c(("show me dev-box", "remind me which one we looked at before"), "", "dev-box"),
    c(("create a sandbox named t-2", "what did you create a minute ago?"), "", "t-2"),
    c(("delete py-worker", "the last thing you deleted was?"), "", "py-worker"),
    c(("create a sandbox named z-1", "which did you just make?"), "", "z-1"),
    c(("show me gpu-trainer", "what was the sandbox we just checked?"), "", "gpu-trainer"),
    c(("delete py-worker", "what was it that you removed?"), "", "py-worker"),
    c(
        ("show me dev-box", "show gpu-trainer's logs", "which sandboxes did we look at?"),
        "",
        "dev-box",
        "gpu-trainer",
    ),
    c(
        ("delete py-worker", "did you delete anything?"),
        "",
        "py-worker",
        absent=("Deleted sandbox",),
    ),
    c(("list my sandboxes", "what did you create?"), "", "not created"),
    c(("show me dev-box", "remind me what you deleted"), "", "not deleted"),
    c(
        ("create a sandbox named t-3", "create a sandbox named t-4", "which did you make first?"),
        "",
        "t-3",
    ),
]

CREATE_WITH_IMAGE = [  # "from IMAGE", "off the IMAGE image", "call it X"
    c(
        "new box from ubuntu:22.04, name it ub-1, running uname -a",
        "sandbox_create name=ub-1 image=ubuntu:22.04 command=uname -a",
        "ub-1",
    ),
    c(
        "create a sandbox with the alpine image named al-1",
        "sandbox_create name=al-1 image=alpine",
        "al-1",
    ),
    c("don't create a sandbox off the python:3.12 image", "", "will not create"),
    c(
        "spin one up from python:3.12 named api-test",
        "sandbox_create name=api-test image=python:3.12",
        "api-test",
    ),
    c(
        "new sandbox off the ubuntu:24.04 image, call it u-1",
        "sandbox_create name=u-1 image=ubuntu:24.04",
        "u-1",
    ),
    c(
        "new sandbox off the python:3.12 image, call it web-3, running echo hi",
        "sandbox_create name=web-3 image=python:3.12 command=echo hi",
        "web-3",
    ),
    c(
        "make a sandbox using the node:20 image and name it n-1",
        "sandbox_create name=n-1 image=node:20",
        "n-1",
    ),
    c(
        "create b-1 based on alpine:3.20",
        "sandbox_create name=b-1 image=alpine:3.20",
        "b-1",
    ),
    c(
        "start a sandbox with image ghcr.io/acme/tool:1.2 called t-9",
        "sandbox_create name=t-9 image=ghcr.io/acme/tool:1.2",
        "t-9",
    ),
    c(
        "new sandbox off the ubuntu:24.04 image, call it u-2",
        "sandbox_create name=u-2 image=ubuntu:24.04",
        "declined",
        absent=("Created sandbox",),
        declining="answered-no",
    ),
]

# Issue 41: four more classes, each a property of the grammar (several phrasings,
# negated and multi-turn forms).

NO_CREATE = ("Created sandbox",)

CREATE_AS_A_NEED = [  # "I need a fresh sandbox", name and image as clauses in any order
    c(
        "I need a fresh sandbox, call it scratch-a, using the ubuntu:24.04 image",
        "sandbox_create name=scratch-a image=ubuntu:24.04",
        "Created sandbox scratch-a",
    ),
    c(
        "we need a sandbox called w-1 from alpine:3.20",
        "sandbox_create name=w-1 image=alpine:3.20",
        "Created sandbox w-1",
    ),
    c(
        "I'd like a fresh box, with the node:20 image, named n-2",
        "sandbox_create name=n-2 image=node:20",
        "Created sandbox n-2",
    ),
    c(
        "I want a clean environment using the python:3.12 image, call it env-1",
        "sandbox_create name=env-1 image=python:3.12",
        "Created sandbox env-1",
    ),
    c(
        (LISTED, "I need another one called m-1 using the alpine image"),
        "sandbox_create name=m-1 image=alpine",
        "Created sandbox m-1",
    ),
    c("I need a sandbox list", "sandbox_list", *ALL_THREE, absent=NO_CREATE),
    c("I don't need a new sandbox called x-1", "", "will not create", absent=NO_CREATE),
    c("do I need a new sandbox for this?", "", "have not done anything", absent=NO_CREATE),
    c(
        "we do not need another sandbox named extra-1, just list them",
        "sandbox_list",
        *ALL_THREE,
        absent=NO_CREATE,
    ),
    c(
        "I need a fresh sandbox, call it u-3, using the ubuntu:24.04 image",
        "sandbox_create name=u-3 image=ubuntu:24.04",
        "declined",
        absent=NO_CREATE,
        declining="answered-no",
    ),
]

A_SECOND_ITEM = [  # "... and the X one too", "... and X as well" after one item
    c(
        "show me the anthropic provider config and the nvidia one too",
        "provider_get anthropic + provider_get nvidia",
        "ANTHROPIC_API_KEY",
        "NVIDIA_API_KEY",
    ),
    c(
        "describe the anthropic provider and nvidia as well",
        "provider_get anthropic + provider_get nvidia",
        "NVIDIA_API_KEY",
    ),
    c(
        "tell me about the gh provider, and the nvidia one too",
        "provider_get gh + provider_get nvidia",
        "GITHUB_TOKEN",
        "NVIDIA_API_KEY",
    ),
    c(
        "show the logs of py-worker and the dev-box one too",
        "sandbox_logs py-worker + sandbox_logs dev-box",
        "py-worker",
        "dev-box",
    ),
    c(
        "show me the anthropic provider and the nvidia one too, but don't delete anything",
        "provider_get anthropic + provider_get nvidia",
        "NVIDIA_API_KEY",
        absent=("Deleted sandbox",),
    ),
    c(
        (LISTED, "describe dev-box and the py-worker one as well"),
        "sandbox_get dev-box + sandbox_get py-worker",
        "Ready",
        "Provisioning",
    ),
]

SELECTED_BY_A_STATE_WORD = [  # past tense or adjective: "errored", "the crashed one"
    c(
        "find the sandbox that errored and print its log",
        "sandbox_list ; sandbox_logs gpu-trainer",
        *WHY_GPU,
    ),
    c((LISTED, "show the crashed one"), "sandbox_logs gpu-trainer", *WHY_GPU),
    c(
        (LISTED, "delete the one that failed"),
        "sandbox_delete gpu-trainer",
        "Deleted sandbox gpu-trainer",
    ),
    c(
        "delete the crashed one",
        "sandbox_list ; sandbox_delete gpu-trainer",
        "Deleted sandbox gpu-trainer",
        absent=("Deleted sandbox dev-box", "Deleted sandbox py-worker"),
    ),
    c("tail the logs of the errored one", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c("which sandbox errored? print its logs", "sandbox_list ; sandbox_logs gpu-trainer", *WHY_GPU),
    c(
        "without deleting anything, show me the sandbox that died",
        "sandbox_list ; sandbox_logs gpu-trainer",
        *WHY_GPU,
        absent=("Deleted sandbox",),
    ),
    c(
        "don't delete the crashed one, just show its logs",
        "sandbox_list ; sandbox_logs gpu-trainer",
        *WHY_GPU,
        absent=("Deleted sandbox",),
    ),
    c(
        (LISTED, "which one crashed?", "print its log"),
        "sandbox_logs gpu-trainer",
        "ImagePullBackOff",
    ),
]

MEMORY_BY_ORDER = [  # answered from the conversation, never by a tool
    c(
        ("show me dev-box", "show gpu-trainer", "what was the first sandbox I asked about?"),
        "",
        "first sandbox you asked about was dev-box",
    ),
    c(
        ("show me dev-box", "show gpu-trainer", "and the second one I asked about?"),
        "",
        "second sandbox you asked about was gpu-trainer",
    ),
    c(
        ("delete py-worker", "delete dev-box", "the last one I deleted?"),
        "",
        "last sandbox I deleted was dev-box",
        absent=("Deleted sandbox",),
    ),
    c(
        (
            "show me the nvidia provider",
            "show me the gh provider",
            "what was the second provider we looked at?",
        ),
        "",
        "second provider we looked at was gh",
    ),
    c(
        ("show me the nvidia provider", "which was the third provider we looked at?"),
        "",
        "no third one",
        "nvidia",
    ),
    c(
        (
            "create a sandbox named t-5",
            "create a sandbox named t-6",
            "what was the second one you created?",
        ),
        "",
        "second sandbox I created was t-6",
        absent=NO_CREATE,
    ),
    c(
        (
            "show me dev-box",
            "show gpu-trainer's logs",
            "don't look anything up, just tell me the first sandbox I asked about",
        ),
        "",
        "first sandbox you asked about was dev-box",
    ),
    c(
        ("show me dev-box", "which sandbox did I ask about first? do not delete it"),
        "",
        "first sandbox you asked about was dev-box",
        absent=("Deleted sandbox",),
    ),
    c(("show me dev-box", "what was the last one I deleted?"), "", "not deleted any sandbox"),
]

CORPUS: list[Case] = [
    *SINGLE_TOOL,
    *DIAGNOSIS,
    *MULTI_STEP,
    *FOLLOW_UPS,
    *CONVERSATION,
    *NOT_UNDERSTOOD,
    *QUESTIONS,
    *DECLINED,
    *EXPLORED,
    *COORDINATION,
    *SELECT_THEN_ACT,
    *DOMAIN_QUALIFIERS,
    *WHAT_REMAINS,
    *ABOUT_THE_CONVERSATION,
    *CREATE_WITH_IMAGE,
    *CREATE_AS_A_NEED,
    *A_SECOND_ITEM,
    *SELECTED_BY_A_STATE_WORD,
    *MEMORY_BY_ORDER,
]
