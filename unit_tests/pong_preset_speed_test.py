"""benchmarks.pong_preset_speed: the table's hours from each agent's rate, its refusals, and one real measurement."""

import math

import pytest

from benchmarks import pong_preset_speed as bench


def test_the_table_gives_each_agents_rate_and_the_hours_of_2m_agent_steps():
    args = bench.parse_args(['--agents', 'dqn,sac', '--seconds', '60', '--warmup_seconds', '25'])
    results = {'dqn': {'rate': 200.0, 'learner_steps': 1_000.0}, 'sac': {'rate': math.nan, 'learner_steps': 20.0}, 'r2d2': {'rate': 300.0, 'learner_steps': 0.0}}
    text = bench.table(results, args, ('1.00, 1.00, 1.00', '1.10, 1.00, 1.00'))
    assert '`python -m benchmarks.pong_preset_speed --agents dqn,sac --seconds 60 --warmup_seconds 25`' in text
    assert '| dqn | 200 | 2.8 | 1,000 |' in text  # 2,000,000 / 200 / 3,600 = 2.78 hours
    assert '| sac | nan | nan | 20 |' in text
    assert '| r2d2 | 300 | not measured: too few learner steps | 0 |' in text  # the window timed its acting alone
    assert 'trained for 60 s' in text and 'after its first 25 s' in text


def test_extra_flags_go_on_top_of_the_preset_of_the_agents_they_name_and_into_the_table(tmp_path):
    args = bench.parse_args(['--agents', 'r2d2,ngu', '--extra_flags=--learner_threads=1', '--extra_flags=r2d2:--bf16_learning'])
    r2d2, ngu = (bench.command_line(agent, args, tmp_path / agent) for agent in ('r2d2', 'ngu'))
    assert r2d2[3:6] == ['deep_rl_zoo.r2d2.run_atari', '--environment_name=Pong', '--num_iterations=1']
    assert r2d2[-2:] == ['--learner_threads=1', '--bf16_learning'] and ngu[-1] == '--learner_threads=1' and '--bf16_learning' not in ngu
    assert f'--train_dir={tmp_path / "ngu"}' in ngu
    text = bench.table({'r2d2': {'rate': 400.0, 'learner_steps': 10.0}}, args, ('1', '1'))
    assert 'On top of the presets (--extra_flags): `--learner_threads=1`, `r2d2:--bf16_learning`.' in text
    assert '| r2d2 | 400 | 1.4 | 10 |' in text
    assert 'On top of the presets' not in bench.table({}, bench.parse_args([]), ('1', '1'))


def test_unknown_agents_and_a_window_too_short_for_two_progress_lines_are_refused(capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(['--agents', 'dqn,dqm'])
    assert '--agents: no run_atari for dqm' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.parse_args(['--seconds', '54', '--warmup_seconds', '25'])
    assert '--seconds (54) must exceed --warmup_seconds (25) by at least 30 s' in capsys.readouterr().err
    assert bench.parse_args(['--seconds', '55', '--warmup_seconds', '25']).seconds == 55
    assert len(bench.AGENTS) == 21


def test_reuse_reads_the_rate_after_the_warmup_from_the_stamped_log_and_the_learner_steps_from_the_results(tmp_path):
    run_dir = tmp_path / 'dqn'
    run_dir.mkdir()
    (run_dir / 'log.txt').write_text(
        '[    3.00] preset Pong (deep_rl_zoo/dqn/settings.py, ...)\n'
        '[   12.00] env steps 1,000/2,000,000 (0.1%) | 90 steps/s\n'  # before the warmup: not counted
        '[   22.00] env steps 3,000/2,000,000 (0.2%) | 200 steps/s\n'
        '[   32.00] env steps 5,500/2,000,000 (0.3%) | 220 steps/s\n'
        '[   35.00] env steps 6,000/2,000,000 (0.3%) | 220 steps/s\n'  # forced by the run's end: not counted
        '[   35.10] iteration 0: env steps 6000, train return -20.50\n'
    )
    (run_dir / 'results.csv').write_text('iteration,env_steps,learner_steps\n0,6000,560\n')
    args = bench.parse_args(['--agents', 'dqn', '--warmup_seconds', '20', '--reuse', '--raw_dir', str(tmp_path)])
    assert bench.read_run('dqn', args, run_dir) == {'rate': (5_500 - 3_000) / (32.0 - 22.0), 'learner_steps': 560.0}
    with pytest.raises(SystemExit, match='no run of sac in'):
        bench.read_run('sac', args, tmp_path / 'sac')


def test_a_run_with_one_progress_line_after_the_warmup_has_no_rate_and_says_why(tmp_path, capsys):
    run_dir = tmp_path / 'ppo'
    run_dir.mkdir()
    (run_dir / 'log.txt').write_text(
        '[   21.00] env steps 512/2,000,000 (0.0%) | n/a steps/s\n'  # a slow start-up: the first line comes late
        '[   32.00] env steps 4,608/2,000,000 (0.2%) | 370 steps/s\n'
        '[   36.00] env steps 6,144/2,000,000 (0.3%) | 360 steps/s\n'  # forced by the run's end: not counted
        '[   36.10] iteration 0: env steps 6144, train return -20.50\n'
    )
    (run_dir / 'results.csv').write_text('iteration,env_steps,learner_steps\n0,6144,6\n')
    args = bench.parse_args(['--agents', 'ppo', '--seconds', '55', '--warmup_seconds', '25', '--reuse', '--raw_dir', str(tmp_path)])
    assert math.isnan(bench.read_run('ppo', args, run_dir)['rate'])
    assert '1 progress line(s) after --warmup_seconds=25' in capsys.readouterr().out


@pytest.mark.slow
def test_a_real_measurement_of_the_ppo_preset_writes_the_table(tmp_path):
    out = tmp_path / 'speed.md'
    argv = ['--agents', 'ppo', '--seconds', '35', '--warmup_seconds', '5', '--out', str(out), '--raw_dir', str(tmp_path / 'raw')]
    assert bench.main(argv) == 0
    row = next(line for line in out.read_text().splitlines() if line.startswith('| ppo |'))
    rate, hours, learner_steps = (float(cell.replace(',', '')) for cell in row.split('|')[2:5])
    assert rate > 0 and hours == pytest.approx(2_000_000 / rate / 3600, rel=0.05, abs=0.05) and learner_steps > 0
    assert (tmp_path / 'raw' / 'ppo' / 'log.txt').stat().st_size > 0
    assert bench.main(argv + ['--reuse']) == 0  # the same table from the run's files
    assert next(line for line in out.read_text().splitlines() if line.startswith('| ppo |')) == row
