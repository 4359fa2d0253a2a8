"""Pipeline communication and the 1F1B schedule, after ``megatron/core/pipeline_parallel``
(p2p_communication.py, schedules.py: ``forward_backward_pipelining_without_interleaving`` and
``forward_backward_no_pipelining``).

Point-to-point transfers are posted as gloo isend/irecv in Megatron's even/odd order and then waited on,
so a send never blocks its peer's matching send.  After a stage's output is sent, its storage is released
while its autograd graph is kept (Megatron ``deallocate_output_tensor``), and backward runs through the
engine directly (``custom_backward``) because the output no longer has its shape.
"""

import torch
import torch.distributed as dist

from . import markers


class P2P:
    def __init__(self, ps, shape, dtype):
        self.ps, self.shape, self.dtype = ps, shape, dtype

    def communicate(self, send_next=None, send_prev=None, recv_prev=False, recv_next=False):
        ps = self.ps
        buf_prev = torch.empty(self.shape, dtype=self.dtype) if recv_prev else None
        buf_next = torch.empty(self.shape, dtype=self.dtype) if recv_next else None
        ops = []

        def send(t, peer):
            ops.append(dist.isend(t.contiguous(), peer))

        def recv(t, peer):
            ops.append(dist.irecv(t, peer))

        if ps.rank % 2 == 0:
            if send_next is not None:
                send(send_next, ps.next_rank)
            if buf_prev is not None:
                recv(buf_prev, ps.prev_rank)
            if send_prev is not None:
                send(send_prev, ps.prev_rank)
            if buf_next is not None:
                recv(buf_next, ps.next_rank)
        else:
            if buf_prev is not None:
                recv(buf_prev, ps.prev_rank)
            if send_next is not None:
                send(send_next, ps.next_rank)
            if buf_next is not None:
                recv(buf_next, ps.next_rank)
            if send_prev is not None:
                send(send_prev, ps.prev_rank)
        for op in ops:
            op.wait()
        return buf_prev, buf_next

    def recv_forward(self):
        return None if self.ps.is_first_stage else self.communicate(recv_prev=True)[0]

    def send_forward(self, t):
        if not self.ps.is_last_stage:
            self.communicate(send_next=t)

    def recv_backward(self):
        return None if self.ps.is_last_stage else self.communicate(recv_next=True)[1]

    def send_backward(self, g):
        if not self.ps.is_first_stage:
            self.communicate(send_prev=g)

    def send_forward_recv_backward(self, t):
        if self.ps.is_last_stage:
            return None
        return self.communicate(send_next=t, recv_next=True)[1]

    def send_backward_recv_forward(self, g):
        if self.ps.is_first_stage:
            return None
        return self.communicate(send_prev=g, recv_prev=True)[0]


def deallocate_output_tensor(out):
    """Releases the storage of a sent stage output; its grad_fn stays for backward."""
    if out is None or not isinstance(out, torch.Tensor) or out.dim() == 0:
        return
    out.data = torch.empty((1,), dtype=out.dtype)


def custom_backward(output, grad_output):
    """Backward through the engine without the shape check (the output's storage was released)."""
    if grad_output is None:
        grad_output = torch.ones_like(output, memory_format=torch.preserve_format)
    torch.autograd.Variable._execution_engine.run_backward(
        tensors=(output,), grad_tensors=(grad_output,), keep_graph=False, create_graph=False, inputs=tuple(),
        allow_unreachable=True, accumulate_grad=True)


def forward_backward_1f1b(forward_step, ps, p2p, num_microbatches):
    """Runs one iteration of 1F1B on this stage and returns the losses of the micro batches (last stage).

    forward_step(k, input_tensor) → output tensor (last stage: loss / num_microbatches, detached loss)."""
    num_warmup = min(ps.pp - ps.pp_rank - 1, num_microbatches)
    num_remaining = num_microbatches - num_warmup
    inputs, outputs, losses = [], [], []
    next_mb = 0

    def run_forward(input_tensor):
        nonlocal next_mb
        if input_tensor is not None:
            input_tensor.requires_grad_()
        out, loss = forward_step(next_mb, input_tensor)
        next_mb += 1
        if loss is not None:
            losses.append(loss)
        return out

    def run_backward(input_tensor, output, output_grad):
        custom_backward(output, output_grad)
        return None if input_tensor is None else input_tensor.grad

    for _ in range(num_warmup):
        markers.push(markers.FORWARD_STEP)
        input_tensor = p2p.recv_forward()
        out = run_forward(input_tensor)
        p2p.send_forward(out)
        inputs.append(input_tensor)
        outputs.append(out)
        deallocate_output_tensor(out)
        markers.pop()

    input_tensor = None
    if num_remaining > 0:
        markers.push(markers.FORWARD_STEP)
        input_tensor = p2p.recv_forward()
    for i in range(num_remaining):
        last = i == num_remaining - 1
        out = run_forward(input_tensor)
        output_grad = p2p.send_forward_recv_backward(out)
        inputs.append(input_tensor)
        outputs.append(out)
        deallocate_output_tensor(out)
        markers.pop()
        input_tensor, out = inputs.pop(0), outputs.pop(0)
        markers.push(markers.BACKWARD_STEP)
        input_grad = run_backward(input_tensor, out, output_grad)
        del out, output_grad
        markers.pop()
        if last:
            input_tensor = None
            p2p.send_backward(input_grad)
        else:
            markers.push(markers.FORWARD_STEP)
            input_tensor = p2p.send_backward_recv_forward(input_grad)
        del input_grad

    for _ in range(num_warmup):
        input_tensor, out = inputs.pop(0), outputs.pop(0)
        markers.push(markers.BACKWARD_STEP)
        output_grad = p2p.recv_backward()
        input_grad = run_backward(input_tensor, out, output_grad)
        del input_tensor, out, output_grad
        markers.pop()
        p2p.send_backward(input_grad)
        del input_grad
    return losses
