"""The swarm itself: plan, fan out workers, reduce. Async, and knows nothing of Jupyter.

    engine          ``Engine``: a run's steps under one budget; owns and cancels its tasks
    planner         the ``{"tasks": [...]}`` contract; ``ladder``: its response_format rungs
    worker          one worker's calls or tool loop; ``typedworker``: a ``--schema`` worker
    reducer         the merge; ``reducerinput``: what one request holds; ``reducetree``: parts
    scoring         ``Check``: Python checks of the answer after the reducer, and built-ins
    judge           the judge: a model scores the answer against the rubric (``judge-<i>``)
    batchfanout     batch mode's fan-out (the workers as Batch API batches)
    recordbuilder   ``RunRecordBuilder``: the sink that builds the ``RunRecord`` from events
    modelcaller     ``ModelCaller``: the seam every model call crosses
    batchservice    ``BatchService``: the seam of batch mode, and its JSONL line
    budget          ``Budget``: reserve before a call, settle after it
    budgetedcalls   every call of a run under its budget, each leaving a ``CallRecord``
    prices          the price table (``prices.json``) and context windows
    context         ``StepContext``: what a step may use of the run
    background      the one background event-loop thread, for sync callers

Modules are imported by their full path; this package re-exports nothing, so importing
one step does not import the others.
"""

__all__: list[str] = []
