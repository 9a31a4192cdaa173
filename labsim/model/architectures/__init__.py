"""The architectures: ways of carrying a tool call across the user's answers.

`base.Architecture` is what they share; `legacy.HeldStream` holds a call open on an SSE
stream, and its two ways of bringing the answer back are `sse_store` (through a shared
store) and `sticky` (a cookie-sticky load balancer); `mrtr` ends every round and hands
the state to the client. `persistent` runs calls to persistent tools as tasks beside
whichever architecture serves the others. They stand on the parts of the model and know
nothing of the simulation that runs them.
"""
