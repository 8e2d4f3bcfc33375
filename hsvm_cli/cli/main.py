import click

@click.group()
def cli():
    """hsvm"""
