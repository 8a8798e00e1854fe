"""benchmarks.denormals: the denormal entries of a checkpoint's optimizer moments and the step timed both ways."""

import torch

from benchmarks import denormals


def adam_state() -> dict:
    """An Adam state of two parameters as a checkpoint holds it, with 3 and 0 denormal first moments, 1 second."""
    # Bit patterns (arithmetic would flush them in a process that flushes denormals): half, a quarter and minus an
    # eighth of the smallest normal float32; the smallest normal itself, 0 and 1 are not denormal.
    first = torch.tensor([0x00400000, 0x00200000, -0x7FF00000, 0x00800000, 0, 0x3F800000], dtype=torch.int32).view(torch.float32)
    second = torch.tensor([0x00400000, 0x3F800000, 0x40000000, 0x40400000, 0x40800000, 0x40A00000], dtype=torch.int32).view(torch.float32)
    return {
        'state': {
            0: {'step': torch.tensor(5.0), 'exp_avg': first, 'exp_avg_sq': second},
            1: {'step': torch.tensor(5.0), 'exp_avg': torch.ones(2, 2), 'exp_avg_sq': torch.ones(2, 2)},
        },
        'param_groups': [{'params': [0, 1]}],
    }


def test_denormal_entries_are_counted_per_moment_over_every_parameter():
    assert denormals.denormal_counts(adam_state()) == {'exp_avg': (3, 10), 'exp_avg_sq': (1, 10)}
    square_avg = torch.tensor([0, 0x000116C2], dtype=torch.int32).view(torch.float32)  # 0 and 1e-40
    rmsprop = {'state': {0: {'step': torch.tensor(1.0), 'square_avg': square_avg}}, 'param_groups': [{'params': [0]}]}
    assert denormals.denormal_counts(rmsprop) == {'square_avg': (1, 2)}


def test_the_step_is_timed_on_the_checkpoints_moments_and_leaves_torch_as_it_was():
    threads, flushing = torch.get_num_threads(), denormals.flushing_denormals()
    for flush in (False, True):
        assert denormals.step_seconds(adam_state(), flush, repeats=3) > 0
    assert torch.get_num_threads() == threads and denormals.flushing_denormals() == flushing
    text = denormals.markdown('run.ckpt', denormals.denormal_counts(adam_state()), 0.020, 0.0015)
    assert '| exp_avg | 3 | 10 | 30.0% |' in text and '| exp_avg_sq | 1 | 10 | 10.0% |' in text
    assert '20.00 ms with denormals as they are, 1.50 ms flushed to zero (13.3x)' in text


def test_flushing_denormals_reads_this_threads_setting():
    flushing = denormals.flushing_denormals()
    try:
        torch.set_flush_denormal(True)
        assert denormals.flushing_denormals()
        assert denormals.denormal_counts(adam_state()) == {'exp_avg': (3, 10), 'exp_avg_sq': (1, 10)}  # counted from bits
        torch.set_flush_denormal(False)
        assert not denormals.flushing_denormals()
    finally:
        torch.set_flush_denormal(flushing)


def test_the_optimizer_state_is_the_learners_or_appos_first_policys():
    assert denormals.optimizer_state_of({'network': {}, 'optimizer': 'adam'}) == 'adam'
    assert denormals.optimizer_state_of({'network': {}, 'policies': [{'optimizer': 'first'}, {'optimizer': 'second'}]}) == 'first'
    assert denormals.optimizer_state_of({'network': {}, 'learner_steps': 3}) is None
