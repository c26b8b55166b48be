"""HiveD's buddy-cell engine (Zhao et al., OSDI'20), with Gandiva's migration
and grow/shrink and AntMan's co-location: the rules of ``hived``.

State.  Every GPU g has free milli ``f_g``, GPU memory in use ``m_g`` (limit
``cap_g``, see `alloc.resources`; never over-committed) and an ``owner`` (the tenant whose bound
cell holds it, or none).  Physical cells form the forest of
[`alloc.tenancy.cell_tree`][alloc.tenancy.cell_tree]; ``free[t, l]`` is the set of maximal cells of
type t at level l holding no bound GPU (the buddy free lists) and
``unused[v, t, l]`` the tenant's virtual cells not yet bound.

Round.  (1) Running jobs (``current``) are put back where they run; the binding
of their tenants' cells is inferred ([`alloc.tenancy.infer_binding`][alloc.tenancy.infer_binding]:
minimal cover, then the exact cell-placing model, under the caller's deadline).  (2) Pending guaranteed jobs, by
rank (the caller's order, else priority: `alloc.problem.Problem.prio_key`),
then pending opportunistic jobs by rank.  A guaranteed job of tenant v that
needs n GPUs tries, in order:

    A0  GPUs of v's bound cells that are free;
    B0  binding a new cell of v (buddy allocation: a free cell of the level,
        else split the free cell of the innermost level above it; cells whose
        GPUs are all free first), repeated while v's free GPUs are too few;
    A1  v's bound GPUs, preempting opportunistic jobs on them;
    B1  binding a new cell, preempting opportunistic jobs in it;
    A2  v's bound GPUs, also preempting v's own lower-priority guaranteed jobs.

A cell whose last guaranteed job leaves is released and merged with free
buddies.  Binding by buddy order keeps sharing safety (HiveD's theorem); when a
cell is split out of order (the job did not fit the buddy cell) safety is
re-checked and the bind undone if it fails.  An opportunistic job takes
unbound GPUs first, then co-locates on a guaranteed job's GPU within the
remaining milli and GPU memory (AntMan), then idle GPUs of bound cells; it never
preempts.  Inside a server GPUs are chosen to consolidate (innermost switch /
socket that fits, smallest such group), so the profile's span factor
``span(level)`` is as high as the free GPUs allow; servers are chosen best fit
(fewest victims, then least normalised leftover CPU + memory + GPU).
Victims: on each GPU the jobs the job outranks, opportunistic ones first,
then lowest priority, as few as free its share; a job of several GPUs
takes the GPUs without victims first, then those whose victims stop first
(opportunistic before guaranteed, lower priority before higher); then each
victim the job still fits without on the same server(s) is spared, the
highest first, its GPUs chosen again among what the others free
(`Engine.fewer_victims`).  Across the jobs of one pass with no move
allowed, a victim the pass's jobs together did not need is spared
(`alloc.engines.cells.spare`).

Spreading.  A whole-GPU job of n >= 2 GPUs without locality (or with a
locality above the servers) that no single server holds is spread over
servers, in each of the steps above (its tenant's bound GPUs, a new cell,
opportunistic GPUs): the servers with the most usable GPUs first (fewest
servers), inside one domain of the innermost level above the servers when
one holds them (the smallest such), else of the next level up, ..., else
over the cluster (with a locality above the servers: one of its domains); its
CPU and memory split over the servers in proportion to their GPUs
([`alloc.problem.Problem.make_assign`][alloc.problem.Problem.make_assign]).

Elastic jobs (``min_gpus``/``max_gpus``) are admitted at the smallest size
``min_gpus`` that fits (Gandiva shrink: admit more jobs), then, once every job
has been tried, grown to the size n <= max_gpus (or gpus; only the profile's
``scaling`` points when it has them) that maximises
the objective's coefficient at that size (for throughput ``weight * scale(n)``,
[`alloc.objectives.scale_factor`][alloc.objectives.scale_factor]; for GPUs ``n * milli``) among
those that
fit in free GPUs (Gandiva grow), and only when the job's real throughput on
the new GPUs (the profile's grid at its CPU and memory per GPU, GPU speed,
span, scaling) is higher than before; a running elastic job keeps its size
unless migration is on.

Migration (options ``migration_cost=c`` and/or ``max_moves=k``; off by
default).  Preemption victims are first re-placed elsewhere (a move) instead of
being stopped; then, for each job still unplaced, a server is defragmented by
moving at most two running jobs off it when ``upper(job) - c * moves > 0``
(``upper``: the most the job can be worth placed, `Objective.upper`);
finally multi-GPU running jobs are re-consolidated when their throughput gain
exceeds c.  At most k moves (unbounded when only c is given).
``stats["moves"]`` counts jobs whose placement differs from ``current``.

Time.  Every step checks the caller's [`Deadline`][alloc.deadline.Deadline]: out
of time, the round stops and returns the jobs placed so far (running jobs
stay where they run).

Trial moves (defragmentation, consolidation, the tenancy model's hints) open
a `Engine.checkpoint`; every change of the state (place, remove, bind,
unbind) is journalled while one is open and `Engine.rollback` undoes
them in reverse order.

Options: ``migration_cost``, ``max_moves``, ``preempt`` (default True),
``colocate`` (default True), ``grow`` (default True), ``gpu_mem_capacity``
(``{type: MiB}``).

The modules:

* `alloc.engines.cells.engine` -- the state (`Engine`) and its steps: place,
  remove, bind, unbind, the server and GPU choices, the running jobs put
  back (`restore_running`);
* `alloc.engines.cells.round` -- one round (`run`): the jobs placed by rank,
  elastic jobs grown, servers defragmented and jobs consolidated where the
  call allows moves;
* `alloc.engines.cells.kept` -- the engine kept across the rounds of a
  scheduler loop instead of rebuilt;
* `alloc.engines.cells.first` -- the kept search for the first servers that
  take a whole-GPU job alone.

Users: ``hived`` (`alloc.solvers.hived`), ``drf`` on tenancy inputs, the
guarantee the core keeps for every solver (`alloc.guarantee`), the tenancy
model's warm starts and decoding (`alloc.solvers.exact.tenancy`).
"""
