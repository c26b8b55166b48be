"""Request and response bodies of the HTTP API (pydantic models).

Instances, jobs, servers, placements and allocations are passed through as
JSON objects in the file formats (documented by the components of
`alloc.service.schemas`) and checked by the library itself, so the
messages are the library's.  The envelopes around them are checked here: a
request of the wrong shape is refused with 422.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from .schemas import ref


# each a JSON object of the alloc schema of that name, wrapped in allOf (pydantic resolves
# a bare $ref with sibling keys itself)
InstanceDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Instance")]})]
ClusterDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Cluster")]})]
JobDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Job")]})]
ServerDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Server")]})]
TenantDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Tenant")]})]
PlacementDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Placement")]})]
AllocationDoc = Annotated[dict[str, Any], WithJsonSchema({"allOf": [ref("Allocation")]})]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Settings(_Strict):
    """How rounds are solved (the arguments of ``allocate()``)."""
    solver: str = Field("best-fit", description="a registered solver (GET /v1/solvers)")
    objective: Literal["throughput", "gpus", "jobs"] | None = Field(
        None, description="what to maximise (null: throughput, without a warning from a solver "
                          "that places by its own rule)")
    time_limit: Seconds | None = Field(
        None, description="seconds per call (default: 60, or the service's --max-time-limit)")
    seed: int = Field(0, ge=0, le=2 ** 31 - 1)
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="the solver's declared options")
    max_moves: int | None = Field(0, ge=0, description="running jobs that may move per call "
                                                     "(null: any number, with move_cost)")
    move_cost: float | None = Field(None, ge=0, allow_inf_nan=False,
                                    description="objective units per move")
    order: list[str] | None = Field(None, description="job ids, highest rank first")
    preempt: Literal["order"] | None = Field(
        None, description="'order': a running job ranked below a waiting job that cannot "
                          "otherwise be placed is stopped for it (null: the tenancy rules)")


class SolveIn(Settings):
    """``POST /v1/solve``."""
    instance: InstanceDoc
    strict: bool = Field(False, description="refuse jobs that cannot be placed now")


class CheckIn(_Strict):
    """``POST /v1/check``."""
    instance: InstanceDoc
    allocation: AllocationDoc
    max_moves: int | None = Field(0, ge=0, description="moves the call allowed (null: any)")


class SessionIn(Settings):
    """``POST /v1/sessions``: the cluster, optional starting jobs, the settings."""
    cluster: ClusterDoc
    tenants: dict[str, TenantDoc] = Field(default_factory=dict)
    models: dict[str, dict[str, Any]] = Field(default_factory=dict,
                                              description="inline models (alloc.model/1)")
    jobs: list[JobDoc] = Field(default_factory=list)
    name: str = Field("session", max_length=256)
    order_policy: str | None = Field(
        None, max_length=512,
        description="a registered order policy (GET /v1/policies?kind=order), "
                    "NAME[:KEY=VALUE,...]: each round ranks the jobs with it (submission time, "
                    "GPUs, priority, GPU-seconds held on the service's clock) and sets the "
                    "session's order; not with 'order'")


class Submit(_Strict):
    """A new job (the instance format's job object; with ``current``, already running there)."""
    type: Literal["submit"]
    job: JobDoc


class Finish(_Strict):
    """The job completed; its resources are free at once."""
    type: Literal["finish"]
    job: str


class FailJob(_Strict):
    """The job failed: it leaves (counted as failed), or with ``requeue`` waits again."""
    type: Literal["fail_job"]
    job: str
    requeue: bool = False


class Stop(_Strict):
    """The job was stopped on purpose (not a failure): it leaves, or waits again."""
    type: Literal["stop"]
    job: str
    requeue: bool = False


class Preempt(_Strict):
    """The scheduler preempted the running job: it waits, not placed next round."""
    type: Literal["preempt"]
    job: str


class Reconcile(_Strict):
    """What runs where, as the caller sees it: job id -> GPU names (null: where the
    session has it); the session reports and fixes the difference."""
    type: Literal["reconcile"]
    running: dict[str, list[str] | None]


class FailServer(_Strict):
    """The server is gone: its jobs wait again."""
    type: Literal["fail_server"]
    server: str


class DrainServer(_Strict):
    """No new placements on the server; its running jobs stay."""
    type: Literal["drain_server"]
    server: str


class UndrainServer(_Strict):
    """The drained server takes new placements again."""
    type: Literal["undrain_server"]
    server: str


class AddServer(_Strict):
    """A new server (the instance format's server object), or a failed one back."""
    type: Literal["add_server"]
    server: ServerDoc


class SetPriority(_Strict):
    """The job's new priority."""
    type: Literal["set_priority"]
    job: str
    priority: int = Field(ge=-1000, le=1000)


class SetOrder(_Strict):
    """Explicit ranks, highest first (any length); null: back to priorities."""
    type: Literal["set_order"]
    order: list[str] | None


Event = Annotated[Union[Submit, Finish, FailJob, Stop, Preempt, Reconcile, FailServer,
                        DrainServer, UndrainServer, AddServer, SetPriority, SetOrder],
                  Field(discriminator="type")]


class EventsIn(_Strict):
    """``POST /v1/sessions/{id}/events``: applied in order, all or none."""
    events: list[Event]


class RoundIn(_Strict):
    """``POST /v1/sessions/{id}/rounds``."""
    time_limit: Seconds | None = Field(default=None,
                                       description="seconds (default: the session's)")
    allocation: bool = Field(default=False, description="also return the whole allocation")


# ------------------------------------------------------------------ responses
class ErrorOut(BaseModel):
    """Every error: one line naming the field and what was expected."""
    error: str = Field(description="one line: the field and what was expected")


class HealthOut(BaseModel):
    """The service answers."""
    status: Literal["ok"]
    version: str


class OptionOut(BaseModel):
    """A solver's declared option."""
    name: str
    type: str
    default: Any = None
    help: str = ""
    model_config = ConfigDict(extra="allow")


class SolverOut(BaseModel):
    """A registered solver."""
    name: str
    family: str
    kind: Literal["exact", "heuristic"]
    available: bool
    unavailable_reason: str | None
    capabilities: list[str]
    options: list[OptionOut]
    description: str
    restricts: str


class PolicyOut(BaseModel):
    """A registered scheduling policy."""
    kind: Literal["admission", "order", "placement", "sizing", "shares", "mechanism"]
    name: str
    summary: str
    needs: list[str]
    params: list[OptionOut]
    origin: str
    available: bool
    unavailable_reason: str | None


class CheckOut(BaseModel):
    """The violations of an allocation (empty: valid)."""
    valid: bool
    violations: list[str]


class SessionOut(BaseModel):
    """A session's id and state."""
    id: str
    state: dict[str, Any]


class SessionsOut(BaseModel):
    """The open sessions."""
    sessions: list[str]


class EventsOut(BaseModel):
    """Events applied."""
    session: str
    applied: int
    events: int = Field(description="events applied to the session so far")
    results: list[Any] = Field(description="per event: the jobs fail_server requeued, else null")


class Move(BaseModel):
    """A moved job: its new binding, and the old one under ``from``."""
    job: str
    gpus: list[dict[str, Any]]
    cpu: dict[str, int]
    mem: dict[str, int]
    throughput: float
    from_: PlacementDoc = Field(alias="from")


class RoundOut(BaseModel):
    """One round: what to start, move and preempt; what waits and why."""
    session: str
    round: int
    status: Literal["optimal", "feasible", "infeasible", "unknown"]
    value: float
    bound: float | None
    start: list[PlacementDoc]
    move: list[Move]
    preempt: list[PlacementDoc]
    unplaced: list[str]
    reasons: dict[str, str]
    running: int
    latency_s: float
    allocation: AllocationDoc | None = None


class DeletedOut(BaseModel):
    """A closed session."""
    deleted: str
