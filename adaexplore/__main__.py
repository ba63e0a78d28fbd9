from adaexplore.cli import main

main()
