"""Bring a Deep RL Zoo model (a Hugging Face Hub repository, or a local model folder) into the checkpoints directory,
ready for `eval_agent` and for a training run that continues from it.

    python -m deep_rl_zoo.load_from_hub -r USER/NAME
    python -m deep_rl_zoo.load_from_hub -r path/to/model_folder --checkpoint_dir=checkpoints
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Optional

from deep_rl_zoo import checkpoint, model_card


def download(repository: str, revision: Optional[str] = None) -> str:
    """The local folder of `repository`: itself when it is a folder, else a snapshot of the hub repository."""
    if os.path.isdir(repository):
        return repository
    model_card.check_repository_id(repository, flag='-r', alternative=', or a local model folder')
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(repo_id=repository, repo_type='model', revision=revision)
    except Exception as error:  # offline, unknown repository, gated, ...: one line
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ''
        raise model_card.HubError(
            f'could not download {repository} from the Hugging Face Hub ({type(error).__name__}: {first_line}); '
            'on an offline machine pass a local model folder to -r'
        ) from None


def install(folder: str, checkpoint_dir: str, force: bool = False) -> dict:
    """Copies the checkpoint of the model folder `folder` into `checkpoint_dir` (checked first: it must load as a
    Deep RL Zoo checkpoint of the agent and environment its card names) with its config beside it; returns the
    folder's config with `checkpoint_path` added. A checkpoint or config already there is replaced only with `force`
    (it may be the user's own training)."""
    config = model_card.read_model_folder(folder)
    source = os.path.join(folder, config['checkpoint_file'])
    checkpoint.load_checkpoint(source, agent_name=config['agent_name'], environment_name=config['environment_name'])
    target = os.path.join(checkpoint_dir, config['checkpoint_file'])
    stem = os.path.splitext(config['checkpoint_file'])[0]
    target_config = os.path.join(checkpoint_dir, f'{stem}.{model_card.CONFIG_FILE}')
    existing = [path for path in (target, target_config) if os.path.exists(path)]
    if existing and not force:
        raise model_card.HubError(f'{existing[0]} exists; pass --force to replace it, or another --checkpoint_dir')
    os.makedirs(checkpoint_dir, exist_ok=True)
    shutil.copy2(source, target + '.part')
    os.replace(target + '.part', target)
    shutil.copy2(os.path.join(folder, model_card.CONFIG_FILE), target_config)
    return {**config, 'checkpoint_path': target}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('-r', '--repository', required=True, help='USER/NAME on the Hugging Face Hub, or a local model folder')
    parser.add_argument('--checkpoint_dir', default='checkpoints', help='where the checkpoint goes (default: checkpoints)')
    parser.add_argument('--revision', default=None, help='a branch, tag or commit of the hub repository')
    parser.add_argument('--force', action='store_true', help='replace a checkpoint of the same name in --checkpoint_dir')
    args = parser.parse_args(argv)
    try:
        config = install(download(args.repository, args.revision), args.checkpoint_dir, args.force)
    except (model_card.HubError, checkpoint.CheckpointError) as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    mean, std = config['mean_reward_metric']
    package, path = config['package'], config['checkpoint_path']
    print(f'{config["agent_name"]} on {config["environment_name"]} (card: mean reward {mean:.2f} +/- {std:.2f}) -> {path}')
    print(f'evaluate: python -m deep_rl_zoo.{package}.eval_agent --load_checkpoint_file={path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
